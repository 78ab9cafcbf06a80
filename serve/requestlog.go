package serve

import (
	"github.com/ignition-mcs/mcs/internal/text"
	"github.com/ignition-mcs/mcs/serve/status"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// requestInfo is what the handlers below the log middleware learned of a
// config request, for its log line and metrics.
type requestInfo struct {
	pool, spec, decision string
	cause                status.Cause // why no config was served; "" when one was
	status, bytes        int
}

// loggedWriter captures the status and size a handler wrote.
type loggedWriter struct {
	http.ResponseWriter
	info *requestInfo
}

func (r *loggedWriter) WriteHeader(code int) {
	if r.info.status == 0 {
		r.info.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *loggedWriter) Write(b []byte) (int, error) {
	if r.info.status == 0 {
		r.info.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.info.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *loggedWriter) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// ReadFrom passes a body on to the connection's ReadFrom: a body of pieces
// reaches a plain TCP connection as one writev only through it (body.writeTo).
func (r *loggedWriter) ReadFrom(src io.Reader) (int64, error) {
	if r.info.status == 0 {
		r.info.status = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := r.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(struct{ io.Writer }{r.ResponseWriter}, src)
	}
	r.info.bytes += int(n)
	return n, err
}

// requestLog writes one line per config request: what was asked, by which
// client, what was served; count is told each request's pool, spec and
// code. Never the body, never the Authorization header. The handlers below
// fill in the request's info, found in its context (infoOf), so a writer
// wrapped in between loses nothing. Its writer and info are the request's
// parts (withState): nothing is allocated per request.
func requestLog(log *slog.Logger, count func(pool, spec string, code int)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			p := partsOf(r)
			if p == nil { // not routed by a Server (tests)
				p = &requestParts{}
				st := &requestState{parent: r.Context()}
				st.parts.Store(p)
				r = r.WithContext(st)
			}
			info := &p.info
			p.writer = loggedWriter{ResponseWriter: w, info: info}
			next.ServeHTTP(&p.writer, r)
			if info.status == 0 {
				info.status = http.StatusOK
			}
			if info.pool == "" {
				info.pool = "-"
			}
			count(info.pool, info.spec, info.status)
			level := slog.LevelInfo
			// A node waiting for a fixable cause retries every few seconds: that
			// cause is logged once at WARN (refuse), each retry at INFO.
			if info.status >= 500 && (info.cause == "" || info.cause == status.CauseStubFailed) {
				level = slog.LevelError
			}
			if !log.Enabled(r.Context(), level) {
				return
			}
			log.LogAttrs(r.Context(), level, "config request",
				slog.String("pool", info.pool),
				slog.String("spec", info.spec),
				slog.Int("status", info.status),
				slog.String("cause", string(info.cause)),
				slog.Int("bytes", info.bytes),
				slog.String("client", text.ForLog(r.Header.Get("User-Agent"))),
				slog.String("accept", text.ForLog(r.Header.Get("Accept"))),
				slog.String("remote", r.RemoteAddr),
				slog.Duration("duration", time.Since(start)),
			)
		})
	}
}

func specLabel(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// codeLabel keeps the code label to the codes the handler writes.
func codeLabel(code int) string {
	switch code {
	case 200, 304, 400, 404, 405, 406, 500, 503, 511:
		return strconv.Itoa(code)
	}
	return "other"
}

package serve

import (
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// requestInfo is filled in by the config handler for the request log line.
type requestInfo struct {
	pool, spec, decision string
	cause                Cause // why no config was served; "" when one was
	status, bytes        int
}

// infoOf finds the request's info through the recorder the log middleware
// wrapped the writer in (no context value: that would copy the request).
func infoOf(w http.ResponseWriter) *requestInfo {
	if rec, ok := w.(*recorder); ok {
		return &rec.info
	}
	return &requestInfo{}
}

// recorder captures the status and size a handler wrote.
type recorder struct {
	http.ResponseWriter
	info requestInfo
}

func (r *recorder) WriteHeader(code int) {
	if r.info.status == 0 {
		r.info.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.info.status == 0 {
		r.info.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.info.bytes += n
	return n, err
}

// ReadFrom passes a body on to the connection's ReadFrom: a body of pieces
// reaches a plain TCP connection as one writev only through it (body.writeTo).
func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
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
// client, what was served. Never the body, never the Authorization header.
func (s *Server) requestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		info := &rec.info
		next.ServeHTTP(rec, r)
		if info.status == 0 {
			info.status = http.StatusOK
		}
		if info.pool == "" {
			info.pool = "-"
		}
		s.requestCounter(info.pool, info.spec, info.status).Inc()
		level := slog.LevelInfo
		// A node waiting for a fixable cause retries every few seconds: that
		// cause is logged once at WARN (refuse), each retry at INFO.
		if info.status >= 500 && (info.cause == "" || info.cause == CauseStubFailed) {
			level = slog.LevelError
		}
		if !s.log.Enabled(r.Context(), level) {
			return
		}
		s.log.LogAttrs(r.Context(), level, "config request",
			slog.String("pool", info.pool),
			slog.String("spec", info.spec),
			slog.Int("status", info.status),
			slog.String("cause", string(info.cause)),
			slog.Int("bytes", info.bytes),
			slog.String("client", r.Header.Get("User-Agent")),
			slog.String("accept", r.Header.Get("Accept")),
			slog.String("remote", r.RemoteAddr),
			slog.Duration("duration", time.Since(start)),
		)
	})
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

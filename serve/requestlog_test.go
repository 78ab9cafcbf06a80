package serve

import (
	"bytes"
	"github.com/ignition-mcs/mcs/serve/status"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// wrapped is a writer another middleware might put between the log
// middleware and the handler (compression, a timeout, a tracer).
type wrapped struct{ http.ResponseWriter }

// The request's pool, spec and cause reach its log line through the
// request's context, whatever writer the handler was given.
func TestRequestLogThroughWrappers(t *testing.T) {
	var logs bytes.Buffer
	s := newTestServer(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, result(t, "worker", plainIgn))
	var codes []string
	count := func(pool, spec string, code int) { codes = append(codes, pool+" "+spec+" "+codeLabel(code)) }
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next.ServeHTTP(wrapped{w}, r) })
	}
	h := requestLog(s.cfg.Logger, count)(wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/config/nope" {
			s.refuser.refuse(w, r, status.CauseUnknownPool, "nope", "unknown pool")
			return
		}
		info := infoOf(r)
		info.pool, info.spec = "worker", "3.0.0"
		w.Write([]byte("{}"))
	})))
	for _, path := range []string{"/config/worker", "/config/nope"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	}
	if got := strings.Join(codes, ", "); got != "worker 3.0.0 200, -  500" {
		t.Errorf("counted %q", got)
	}
	for _, want := range []string{"pool=worker spec=3.0.0 status=200", "cause=unknown-pool"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

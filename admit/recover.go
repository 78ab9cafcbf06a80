package admit

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/ignition-mcs/mcs/internal/text"
)

// recoverer turns a panic while answering into a 500 (the API server then
// fails open) and a log line, never a crash.
func recoverer(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					log.Error("panic answering a request", "path", text.ForLog(r.URL.Path), "panic", text.ForLog(fmt.Sprint(v)))
					http.Error(rw, "internal error", http.StatusInternalServerError)
				}
			}()
			next.ServeHTTP(rw, r)
		})
	}
}

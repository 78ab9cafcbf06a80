package admit

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/convert"
)

// FollowCeiling: unready until a read succeeds; a failed read later keeps
// the ceiling in force.
func TestFollowCeiling(t *testing.T) {
	w := New(Config{})
	answers := make(chan func() (Ceiling, error))
	read := func(ctx context.Context) (Ceiling, error) {
		select {
		case a := <-answers:
			return a()
		case <-ctx.Done():
			return Ceiling{}, ctx.Err()
		}
	}
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.FollowCeiling(ctx, read, ticks); close(done) }()
	defer func() { cancel(); <-done }()

	ready := func() int {
		rec := httptest.NewRecorder()
		w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code
	}
	fail := func() (Ceiling, error) { return Ceiling{}, errors.New("forbidden") }
	c34 := Ceiling{Spec: convert.V3_4, Reader: "OpenShift 4.18.7", Source: "history"}
	// Each answer is taken by one read; the next tick's send returns only
	// once that read has set what it read.
	answers <- fail
	ticks <- time.Time{}
	if code := ready(); code != http.StatusServiceUnavailable {
		t.Errorf("after a failed first read: /readyz %d, want 503", code)
	}
	answers <- func() (Ceiling, error) { return c34, nil }
	ticks <- time.Time{}
	if code, c := ready(), w.current(); code != 200 || c != c34 {
		t.Errorf("after a read: /readyz %d, ceiling %+v", code, c)
	}
	answers <- fail
	ticks <- time.Time{}
	if code, c := ready(), w.current(); code != 200 || c != c34 {
		t.Errorf("after a failed read: /readyz %d, ceiling %+v; want the one in force", code, c)
	}
}

package insight

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/source/kube"
)

// syncs answers each Sync with the next error, then nil.
type syncs struct {
	errs  []error
	calls int
}

func (s *syncs) Sync(_ context.Context, _ []kube.HealthInsight) (bool, error) {
	var err error
	if s.calls < len(s.errs) {
		err = s.errs[s.calls]
	}
	s.calls++
	return err == nil, err
}

// Keep syncs at once and at every tick, and logs a failure only when it
// differs from the one before.
func TestKeep(t *testing.T) {
	no := errors.New("no such API")
	s := &syncs{errs: []error{no, no, nil, no, errors.New("forbidden")}}
	var logged bytes.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	ticks := make(chan time.Time)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		Keep(ctx, s.Sync, func() status.Status { return status.Status{} }, ticks, time.Now, DefaultRunbooks, slog.New(slog.NewTextHandler(&logged, nil)))
	}()
	// A tick is taken only once Keep waits again, so the sync before it
	// has been logged: the last send follows the last error's log line.
	for range len(s.errs) {
		ticks <- time.Time{}
	}
	cancel()
	<-stopped
	if n := strings.Count(logged.String(), "health insights not written"); n != 3 {
		t.Errorf("logged %d failures, want 3 (no such API, again after a success, forbidden):\n%s", n, logged.String())
	}
}

package serving

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/source"
)

// slowSource's first load runs until ctx ends and then takes linger more,
// on the synctest bubble's clock.
type slowSource struct {
	started  chan struct{}
	done     chan struct{}
	returned atomic.Bool
	linger   time.Duration
}

func (s *slowSource) Load(ctx context.Context) (*source.Input, error) {
	close(s.started)
	<-ctx.Done()
	time.Sleep(s.linger) // the bubble's clock: a source ignoring ctx
	s.returned.Store(true)
	close(s.done)
	return nil, ctx.Err()
}
func (s *slowSource) Watch(ctx context.Context, _ chan<- struct{}) { <-ctx.Done() }
func (s *slowSource) String() string                               { return "slow" }

// run returns only once the reloader has stopped, or after the
// shutdown grace when it does not stop; on a synctest bubble's clock.
func TestLifecycleWaitsForReloader(t *testing.T) {
	for _, tc := range []struct {
		name          string
		linger, grace time.Duration
		waited        bool
	}{
		{"stops", 100 * time.Millisecond, 30 * time.Second, true},
		{"stuck past the grace", 3 * time.Second, 200 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &Config{ListenPlain: "127.0.0.1:0", ShutdownGrace: tc.grace}
				src := &slowSource{started: make(chan struct{}), done: make(chan struct{}), linger: tc.linger}
				log := slog.New(slog.DiscardHandler)
				srv, err := serve.New(serve.Config{})
				if err != nil {
					t.Fatal(err)
				}
				rl := &pipeline.Reloader{Source: src, Server: srv, Logger: log}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- c.run(ctx, srv, rl, Listeners{}, nil, func() {}, log, io.Discard) }()
				<-src.started
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if src.returned.Load() != tc.waited {
					t.Fatalf("the load had returned: %v, want %v", src.returned.Load(), tc.waited)
				}
				<-src.done // the stuck load ends before the bubble does
			})
		})
	}
}

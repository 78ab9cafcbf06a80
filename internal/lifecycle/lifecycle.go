// Package lifecycle runs a process's HTTP servers until it is asked to stop, then drains and shuts them down, giving in-flight requests a grace.
package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"
)

// Server is one listener's HTTP server: Serve serves on the listener
// until HTTP is shut down.
type Server struct {
	HTTP  *http.Server
	Serve func() error
}

// Shutdown is how Serve stops: Drain and wait Delay (only when asked to
// stop, not when a listener failed), then give in-flight requests Grace.
type Shutdown struct {
	Drain        func()
	Delay, Grace time.Duration
}

// OnSignal passes each signal on to trigger, after onSignal, until ctx
// ends (a SIGHUP that reloads).
func OnSignal(ctx context.Context, sig <-chan os.Signal, trigger chan<- struct{}, onSignal func(), log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			log.Info("SIGHUP: reloading")
			onSignal()
			select {
			case trigger <- struct{}{}:
			default:
			}
		}
	}
}

// Serve serves on every server until ctx ends or one of them fails;
// either way it then shuts them all down, letting in-flight requests
// finish within the grace, and returns the failure, if any.
func Serve(ctx context.Context, servers []Server, sd Shutdown, log *slog.Logger) error {
	errc := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errc <- s.Serve() }()
	}
	var err error
	running := len(servers)
	select {
	case <-ctx.Done():
		sd.Drain()
		if sd.Delay > 0 {
			log.Info("shutting down: not ready, serving on while load balancers stop sending nodes here", "delay", sd.Delay)
			time.Sleep(sd.Delay)
		}
		log.Info("shutting down; letting in-flight requests finish", "grace", sd.Grace)
	case err = <-errc:
		running--
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		log.Error("a listener failed; shutting the others down", "err", err, "grace", sd.Grace)
	}
	sctx, cancel := context.WithTimeout(context.Background(), sd.Grace)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() { s.HTTP.Shutdown(sctx) })
	}
	wg.Wait()
	// A Serve that had not started when Shutdown ran returns at once and
	// closes its listener; until it has, the listener still accepts.
	for range running {
		<-errc
	}
	return err
}

// WaitAtMost waits for wg, for d at most; what took longer is logged as
// what.
func WaitAtMost(wg *sync.WaitGroup, d time.Duration, what string, log *slog.Logger) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		log.Warn(what+" did not stop in time; exiting without it", "waited", d)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/ignition-mcs/mcs/serve"
)

// lifecycle runs the reloader (which SIGHUP also triggers, after onHUP) and
// the listeners until ctx ends or a listener fails. When ctx ends, srv
// drains (not ready, still serving) for the shutdown delay. Then every
// listener is shut down, in-flight requests getting the shutdown grace to
// finish, and the reloader is waited for, as long again at most: a load
// stuck in a source must not keep the process alive.
func lifecycle(ctx context.Context, o *options, srv *serve.Server, rl *serve.Reloader, ls listenDeps, onHUP func(), log *slog.Logger, stdout io.Writer) error {
	// Registered before anything runs: SIGHUP's default action ends the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	ctx, cancel := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer func() {
		cancel()
		waitAtMost(&bg, o.shutdownGrace, log)
	}()
	trigger := make(chan struct{}, 1)
	bg.Add(2)
	go func() { defer bg.Done(); onSignal(ctx, hup, trigger, onHUP, log) }()
	go func() { defer bg.Done(); rl.Run(ctx, trigger) }()

	servers, err := listen(o, srv, log, ls)
	if err != nil {
		return err
	}
	for _, s := range servers {
		fmt.Fprintf(stdout, "mcs: listening on %s\n", s.desc)
	}
	return serveUntil(ctx, servers, shutdown{drain: srv.Drain, delay: o.shutdownDelay, grace: o.shutdownGrace}, log)
}

// shutdown is how serveUntil stops: drain and wait delay (only when asked
// to stop, not when a listener failed), then give in-flight requests grace.
type shutdown struct {
	drain        func()
	delay, grace time.Duration
}

// onSignal passes each SIGHUP on to trigger, after onHUP, until ctx ends.
func onSignal(ctx context.Context, hup <-chan os.Signal, trigger chan<- struct{}, onHUP func(), log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			log.Info("SIGHUP: reloading")
			onHUP()
			select {
			case trigger <- struct{}{}:
			default:
			}
		}
	}
}

// serveUntil serves on every server until ctx ends or one of them fails;
// either way it then shuts them all down, letting in-flight requests finish
// within sd.grace. It returns the failure, if any.
func serveUntil(ctx context.Context, servers []server, sd shutdown, log *slog.Logger) error {
	errc := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errc <- s.serve() }()
	}
	var err error
	running := len(servers)
	select {
	case <-ctx.Done():
		sd.drain()
		if sd.delay > 0 {
			log.Info("shutting down: not ready, serving on while load balancers stop sending nodes here", "delay", sd.delay)
			time.Sleep(sd.delay)
		}
		log.Info("shutting down; letting in-flight requests finish", "grace", sd.grace)
	case err = <-errc:
		running--
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		log.Error("a listener failed; shutting the others down", "err", err, "grace", sd.grace)
	}
	sctx, cancel := context.WithTimeout(context.Background(), sd.grace)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.srv.Shutdown(sctx) }()
	}
	wg.Wait()
	// A Serve that had not started when Shutdown ran returns at once and
	// closes its listener; until it has, the listener still accepts.
	for range running {
		<-errc
	}
	return err
}

// waitAtMost waits for wg, for d at most.
func waitAtMost(wg *sync.WaitGroup, d time.Duration, log *slog.Logger) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		log.Warn("the reloader did not stop in time; exiting without it", "waited", d)
	}
}

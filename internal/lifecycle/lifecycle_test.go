package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ignition-mcs/mcs/internal/syncbuf"
	"github.com/ignition-mcs/mcs/internal/testkit"
)

// A listener that fails ends serving, and the other listeners are shut
// down before Serve returns.
func TestServeListenerFails(t *testing.T) {
	good, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bad, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bad.Close() // its Serve fails at once
	ok := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }
	hs := []*http.Server{{Handler: http.HandlerFunc(ok)}, {Handler: http.HandlerFunc(ok)}}
	servers := []Server{
		{HTTP: hs[0], Serve: func() error { return hs[0].Serve(good) }},
		{HTTP: hs[1], Serve: func() error { return hs[1].Serve(bad) }},
	}
	err = Serve(context.Background(), servers, Shutdown{Drain: func() {}, Grace: 5 * time.Second}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Serve = %v, want the failed listener's error", err)
	}
	if c, err := net.Dial("tcp", good.Addr().String()); err == nil {
		c.Close()
		t.Fatal("the other listener still accepts connections")
	}
	if err := hs[0].Serve(good); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("the other server was not shut down: Serve = %v", err)
	}
}

// Asked to stop, Serve drains first and serves on for the delay, then
// shuts down; on the synctest bubble's clock.
func TestServeDrainsForTheDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		var drained time.Time
		stopped := make(chan struct{})
		hs := &http.Server{}
		hs.RegisterOnShutdown(func() { close(stopped) })
		served := make(chan struct{})
		srv := Server{HTTP: hs, Serve: func() error { <-served; return http.ErrServerClosed }}
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			done <- Serve(ctx, []Server{srv}, Shutdown{Drain: func() { drained = time.Now() }, Delay: 5 * time.Second, Grace: time.Second}, slog.New(slog.DiscardHandler))
		}()
		cancel()
		testkit.Advance(4 * time.Second)
		if drained.IsZero() || drained != start {
			t.Fatalf("drained at %v, want at once", drained.Sub(start))
		}
		select {
		case <-stopped:
			t.Fatal("shut down within the delay")
		default:
		}
		testkit.Advance(time.Second)
		<-stopped
		close(served)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// OnSignal runs onSignal and triggers once per signal; WaitAtMost gives
// up after d, saying so.
func TestOnSignalAndWaitAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		sig, trigger := make(chan os.Signal), make(chan struct{}, 1)
		calls := 0
		logs := &syncbuf.Buffer{}
		log := slog.New(slog.NewTextHandler(logs, nil))
		var wg sync.WaitGroup
		wg.Go(func() { OnSignal(ctx, sig, trigger, func() { calls++ }, log) })
		sig <- os.Interrupt
		<-trigger
		if calls != 1 {
			t.Errorf("%d calls", calls)
		}
		block := make(chan struct{})
		wg.Go(func() { <-block })
		WaitAtMost(&wg, time.Minute, "the test's work", log)
		if !strings.Contains(logs.String(), "the test's work did not stop in time") {
			t.Errorf("log: %s", logs)
		}
		cancel()
		close(block)
		wg.Wait()
	})
}

package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/source"
)

// Whether --listen-tls was asked for is what was given, not whether its
// value differs from the default: asked for without a certificate, it is an
// error; left at its default, the TLS listener is off with a warning.
func TestListenTLSWithoutCertificate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string // MCS_LISTEN_TLS
		err  string
	}{
		{name: "default", args: nil},
		{name: "off", args: []string{"--listen-tls", ""}},
		{name: "the default address given", args: []string{"--listen-tls", ":22623"}, err: "--listen-tls needs --cert and --key"},
		{name: "another address", args: []string{"--listen-tls", "127.0.0.1:0"}, err: "--listen-tls needs --cert and --key"},
		{name: "upstream's alias", args: []string{"--secure-port", "22623"}, err: "--listen-tls needs --cert and --key"},
		{name: "from the environment", env: ":22623", err: "--listen-tls needs --cert and --key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("MCS_LISTEN_TLS", tc.env)
			}
			o, err := parseFlags(append([]string{"--dir", t.TempDir(), "--listen-plain", "127.0.0.1:0"}, tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			servers, err := listen(o, http.NotFoundHandler(), slog.New(slog.DiscardHandler))
			for _, s := range servers {
				s.ln.Close()
			}
			if tc.err == "" && (err != nil || len(servers) != 1 || servers[0].tls) {
				t.Fatalf("listen: %v, %d servers", err, len(servers))
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("listen: %v, want %q", err, tc.err)
			}
		})
	}
}

// A listener that fails ends serving, and the other listeners are shut
// down before serveUntil returns.
func TestServeUntilListenerFails(t *testing.T) {
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
	servers := []server{
		{srv: &http.Server{Handler: http.HandlerFunc(ok)}, ln: good},
		{srv: &http.Server{Handler: http.HandlerFunc(ok)}, ln: bad},
	}
	err = serveUntil(context.Background(), servers, 5*time.Second, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("serveUntil = %v, want the failed listener's error", err)
	}
	if c, err := net.Dial("tcp", good.Addr().String()); err == nil {
		c.Close()
		t.Fatal("the other listener still accepts connections")
	}
	if err := servers[0].srv.Serve(good); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("the other server was not shut down: Serve = %v", err)
	}
}

// slowSource's first load runs until ctx ends and then takes a while more.
type slowSource struct {
	started  chan struct{}
	returned atomic.Bool
	linger   time.Duration
}

func (s *slowSource) Load(ctx context.Context) (*source.Input, error) {
	close(s.started)
	<-ctx.Done()
	time.Sleep(s.linger)
	s.returned.Store(true)
	return nil, ctx.Err()
}
func (s *slowSource) Watch(ctx context.Context, _ chan<- struct{}) { <-ctx.Done() }
func (s *slowSource) String() string                               { return "slow" }

// lifecycle returns only once the reloader has stopped, or after the
// shutdown grace when it does not stop.
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
			o := &options{listenPlain: "127.0.0.1:0", shutdownGrace: tc.grace}
			src := &slowSource{started: make(chan struct{}), linger: tc.linger}
			log := slog.New(slog.DiscardHandler)
			srv := serve.New(serve.Config{})
			rl := &serve.Reloader{Source: src, Server: srv, Logger: log}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- lifecycle(ctx, o, srv, rl, func() {}, log, io.Discard) }()
			<-src.started
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("lifecycle did not return")
			}
			if src.returned.Load() != tc.waited {
				t.Fatalf("the load had returned: %v, want %v", src.returned.Load(), tc.waited)
			}
		})
	}
}

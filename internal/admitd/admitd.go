// Package admitd runs mcs admit: the admission webhook beside the watch of the MachineConfigs stored before it, both under one ceiling, fixed or followed from the cluster's ClusterVersion.
package admitd

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/admit/stored"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/netlimit"
)

// Config is what the webhook serves with.
type Config struct {
	Client   dynamic.Interface
	Registry *prometheus.Registry
	Log      *slog.Logger
	Recorder stored.Recorder // Events of writes stored above the ceiling
	Deny     bool            // refuse a person's write above the ceiling
	// MaxSpec is a fixed ceiling; zero: the ClusterVersion's, read every
	// Recheck (each tick of Ticks, when given: a test's clock).
	MaxSpec   convert.Version
	Recheck   time.Duration
	Ticks     <-chan time.Time
	Cert, Key string // the serving pair, re-read when it changes
	// Conns bounds the connections, overall and per client address;
	// MaxReviews the reviews under way (admit.Config.MaxReviews).
	Conns      netlimit.Limits
	MaxReviews int
	// Tokens, if not nil, are the bearer tokens that may read /status and
	// /metrics, read at each request; nil: anyone may.
	Tokens func() [][]byte
	// ClientCA, if set, is the CA bundle of the API server's client
	// certificate: reviews without one are refused (admit.TLSConfig).
	ClientCA string
}

// maxStreams bounds the HTTP/2 streams of one connection: the API server
// sends a review per stream, and a few at once; a stream past the
// connection's share of reviews only waits.
const maxStreams = 64

// Serve serves the webhook on ln until ctx ends.
func Serve(ctx context.Context, ln net.Listener, c Config) error {
	// The watch and the ceiling's reader end with Serve, also when serving
	// fails before ctx ends.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ceiling stored.Ceiling
	watch, err := stored.New(stored.Config{Client: c.Client, Ceiling: ceiling.Get, Resync: c.Recheck, Registry: c.Registry, Log: c.Log.With("watch", "stored"), Recorder: c.Recorder})
	if err != nil {
		return err
	}
	ceiling.Follow(watch)
	watch.Start(ctx)
	w := admit.New(admit.Config{
		Logger: c.Log, Registry: c.Registry, Gatherer: c.Registry, Deny: c.Deny,
		Stored: watch.Status, MaxReviews: c.MaxReviews, Admin: bearer(c.Tokens),
	})
	nm, err := netlimit.NewMetrics(c.Registry)
	if err != nil {
		return err
	}
	conns := netlimit.NewTable(c.Conns, nil, c.Log, nm)
	if c.MaxSpec.IsZero() {
		ticks := c.Ticks
		if ticks == nil {
			ticker := time.NewTicker(c.Recheck)
			defer ticker.Stop()
			ticks = ticker.C
		}
		read := func(ctx context.Context) (admit.Ceiling, error) {
			cl, err := admit.CeilingFromCluster(ctx, c.Client)
			if err == nil {
				ceiling.Set(cl.Spec)
			}
			return cl, err
		}
		go w.FollowCeiling(ctx, read, ticks)
	} else {
		ceiling.Set(c.MaxSpec)
		w.SetCeiling(admit.Ceiling{Spec: c.MaxSpec, Reader: "the release a rollback returns to (--max-spec " + c.MaxSpec.String() + ")", Source: "--max-spec " + c.MaxSpec.String()})
	}
	return admit.ServeTLS(ctx, ln, w, admit.TLSConfig{CertFile: c.Cert, KeyFile: c.Key, Logger: c.Log, Conns: conns, MaxStreams: maxStreams, ClientCAFile: c.ClientCA})
}

// CheckPair reads the serving pair as Serve will, so that a missing or
// mismatched certificate is said before anything says "listening".
func CheckPair(cert, key string) error {
	if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
		return fmt.Errorf("serving certificate --cert %s, --key %s: %w", cert, key, err)
	}
	return nil
}

// bearer allows a request whose Authorization is one of tokens, compared
// in constant time; nil tokens: nil, every request.
func bearer(tokens func() [][]byte) func(*http.Request) bool {
	if tokens == nil {
		return nil
	}
	return func(r *http.Request) bool {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || got == "" {
			return false
		}
		allowed := false
		for _, t := range tokens() {
			if subtle.ConstantTimeCompare(t, []byte(got)) == 1 {
				allowed = true
			}
		}
		return allowed
	}
}

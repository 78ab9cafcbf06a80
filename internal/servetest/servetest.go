// Package servetest renders fixture trees and serves them for tests: the one Load, Render, BuildSnapshot and httptest harness every package's tests share.
package servetest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/source"
	"github.com/ignition-mcs/mcs/source/tree"
)

// kubeconfig is the bootstrap kubeconfig the servers of Handler give nodes.
var kubeconfig = []byte("apiVersion: v1\nkind: Config\n")

// Load loads the tree dir; an error fails tb.
func Load(tb testing.TB, dir string) *render.Set {
	tb.Helper()
	set, err := tree.Load(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return set
}

// Render loads dir and renders every pool with opts; any error fails tb.
func Render(tb testing.TB, dir string, opts render.Options) (*render.Set, []*render.Result) {
	tb.Helper()
	set := Load(tb, dir)
	results, errs := set.Render(opts)
	if errs != nil {
		tb.Fatal(errs)
	}
	return set, results
}

// OpenShiftRendered is pool's rendered MachineConfig in set as OpenShift's
// render controller writes it today, at spec 3.5.0, and its JSON as the
// API server stores it; any error fails tb.
func OpenShiftRendered(tb testing.TB, set *render.Set, pool string) (*render.Result, []byte) {
	tb.Helper()
	res, err := set.RenderPool(pool, render.Options{Spec: convert.V3_5})
	if err != nil {
		tb.Fatal(err)
	}
	b, err := res.MachineConfig.MarshalRendered()
	if err != nil {
		tb.Fatal(err)
	}
	return res, b
}

// Handler renders dir with the default options into a server built from
// cfg, serving it as generation 1 with kubeconfig. It returns that server
// and the results by pool.
func Handler(tb testing.TB, dir string, cfg serve.Config) (*serve.Server, map[string]*render.Result) {
	tb.Helper()
	set, results := Render(tb, dir, render.Options{})
	snap, err := pipeline.BuildSnapshot(1, results, set.ControllerConfig(), render.NodeFiles{Kubeconfig: kubeconfig})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := serve.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	s.Swap(snap)
	return s, ByPool(results)
}

// ByPool is results by the pool each is for.
func ByPool(results []*render.Result) map[string]*render.Result {
	m := make(map[string]*render.Result, len(results))
	for _, r := range results {
		m[r.Pool] = r
	}
	return m
}

// Reloading serves src from a server built from cfg (Source defaults to
// src's name), rendered by a Reloader that follows src, debounced 20 ms,
// and logs to log, until the test ends.
func Reloading(tb testing.TB, src source.Source, cfg serve.Config, log *slog.Logger) *serve.Server {
	tb.Helper()
	if cfg.Source == "" {
		cfg.Source = src.String()
	}
	srv, err := serve.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	rl := &pipeline.Reloader{Source: src, Server: srv, Gate: cfg.Gate, Debounce: 20 * time.Millisecond, Logger: log}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rl.Run(ctx, nil) }()
	tb.Cleanup(func() { cancel(); <-done })
	return srv
}

// Package klogbridge routes client-go's klog lines (and controller-runtime's) through the running command's slog logger, so that one log format and level hold for every line.
package klogbridge

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// bridge is the handler client-go's klog writes through, installed
// once by main before anything logs. It hands each line to the running
// command's logger (To), so that with --log-format json stderr holds
// JSON lines only (client-go's leader election and watch errors were
// klog's own text) and --log-level applies to them; before a command has a
// logger, to fallback.
type bridge struct {
	target   *atomic.Pointer[slog.Handler]
	fallback slog.Handler
	with     []func(slog.Handler) slog.Handler // WithAttrs and WithGroup, in order
}

type ctxKey struct{}

// Install routes klog through a bridge, and returns ctx carrying it
// for To. Only main calls it: klog is the process's, so tests running
// commands in the test binary leave it alone.
func Install(ctx context.Context, fallback slog.Handler) context.Context {
	b := &bridge{target: new(atomic.Pointer[slog.Handler]), fallback: fallback}
	klog.SetSlogLogger(slog.New(b))
	// controller-runtime's certwatcher (internal/reload) logs through its
	// own root logger, which complains on stderr until one is set.
	ctrllog.SetLogger(logr.FromSlogHandler(b))
	return context.WithValue(ctx, ctxKey{}, b)
}

// To sends klog's lines to log until the returned function is called,
// when ctx carries main's bridge.
func To(ctx context.Context, log *slog.Logger) (restore func()) {
	b, _ := ctx.Value(ctxKey{}).(*bridge)
	if b == nil {
		return func() {}
	}
	h := log.Handler()
	prev := b.target.Swap(&h)
	return func() { b.target.Store(prev) }
}

func (b *bridge) handler() slog.Handler {
	h := b.fallback
	if p := b.target.Load(); p != nil {
		h = *p
	}
	for _, w := range b.with {
		h = w(h)
	}
	return h
}

func (b *bridge) Enabled(ctx context.Context, l slog.Level) bool {
	return b.handler().Enabled(ctx, l)
}

func (b *bridge) Handle(ctx context.Context, r slog.Record) error {
	return b.handler().Handle(ctx, r)
}

func (b *bridge) WithAttrs(as []slog.Attr) slog.Handler {
	return b.derive(func(h slog.Handler) slog.Handler { return h.WithAttrs(as) })
}

func (b *bridge) WithGroup(name string) slog.Handler {
	return b.derive(func(h slog.Handler) slog.Handler { return h.WithGroup(name) })
}

func (b *bridge) derive(f func(slog.Handler) slog.Handler) slog.Handler {
	c := *b
	c.with = append(slices.Clip(b.with), f)
	return &c
}

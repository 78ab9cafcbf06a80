// Package source defines where rendered pools come from and what the server tells their cluster (Source, Input, Notice), and supplies a directory tree, watched for changes.
package source

import (
	"context"
	"time"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/skewgate"
)

// Source is where rendered pools come from: a directory rendered here, or
// Kubernetes objects. Load does all the work a render needs, so the
// server's reloader is the same for every source. Load tells Reading what it
// reads, so that a load that hangs is reported with where.
type Source interface {
	Load(ctx context.Context) (*Input, error)
	Watch(ctx context.Context, changed chan<- struct{})
	String() string
}

// Input is one render of a source.
type Input struct {
	Results          []*render.Result
	ControllerConfig *render.ControllerConfig // nil when the source has none
	// Failed maps each pool whose render failed to why. Such a pool keeps
	// serving its last good render, as upstream marks only that pool
	// degraded: one broken custom pool must not hold back the others.
	Failed map[string]error
	// SkewPolicy, when set, is the source's boot-image skew policy (a
	// cluster's MachineConfiguration) and replaces the gate's; nil leaves
	// the gate's policy (a file's, or none) as it is.
	SkewPolicy *skewgate.Policy
	// SkewPolicyError is why the source's newest policy was refused (the
	// last good one, SkewPolicy, stays in force); shown in /status.
	SkewPolicyError error
	// Warnings are what the load skipped (a FIFO in a tree, say) and its
	// notices (a MachineConfig no pool selects, a field this release does
	// not know from the API server), shown in /status and logged. A Load
	// that fails may return an Input holding only what it skipped.
	Warnings []string
}

// Progress hears what a load reads now: the server's reload watchdog puts
// one in the load's context, so that a load that hangs is reported with the
// file it hangs on.
type Progress interface{ Reading(what string) }

type progressKey struct{}

// WithProgress returns ctx carrying p, for Reading.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// Reading tells the Progress in ctx, if any, what the load running under
// ctx reads now.
func Reading(ctx context.Context, what string) {
	if p, ok := ctx.Value(progressKey{}).(Progress); ok {
		p.Reading(what)
	}
}

// Backlog is what a source has seen change and not read yet.
type Backlog struct {
	Objects int       // changed objects waiting to be read
	Since   time.Time // when it last began to wait; zero with none
}

// Lagging is a Source that can fall behind the changes it watches (the
// Kubernetes source reads each changed object): Backlog says how far, now.
type Lagging interface{ Backlog() Backlog }

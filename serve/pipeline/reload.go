// Package pipeline renders a source into snapshots, each every response of every pool precomputed, and swaps them into what serves them.
package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// Target is what a Reloader renders for: the snapshot served, where the
// next goes, and where to report how renders went.
type Target interface {
	Snapshot() *Snapshot
	Swap(snap *Snapshot)
	Health() Health
}

// Health is what a Reloader tells, besides the snapshots it swaps in:
// what a load skipped, a refused skew policy, how long a render took, a
// failed render and a load stuck past the timeout (nil: none is).
type Health interface {
	Warned(warnings []string)
	PolicyRefused(err error)
	Took(d time.Duration)
	Failed(f *Failure)
	SetStuck(st *Stuck)
}

// Reloader renders the source into snapshots, off the request path: at
// start, on every change (debounced) and on demand. A failed render keeps the
// last good snapshot serving and is reported.
type Reloader struct {
	Source source.Source
	// Server serves the snapshots and is told how each render went.
	Server Target
	// Gate, when set, is handed the skew policy the source reads (a
	// cluster's MachineConfiguration); the server's gate, as a rule.
	Gate      *skewgate.Gate
	NodeFiles func() (render.NodeFiles, error)
	Debounce  time.Duration
	Logger    *slog.Logger
	// Timeout is how long a load and render may run before it is reported
	// stuck; zero means DefaultReloadTimeout.
	Timeout time.Duration

	gen uint64
}

// health is where the reloader reports how renders went.
func (r *Reloader) health() Health { return r.Server.Health() }

// Reload renders once and swaps the result in. A load running past the
// timeout is reported stuck until it ends.
func (r *Reloader) Reload(ctx context.Context) error {
	start := time.Now()
	ctx, done := r.watch(ctx, start)
	f := r.reload(ctx)
	done()
	r.health().Took(time.Since(start))
	snap := r.Server.Snapshot()
	if f != nil && ctx.Err() != nil {
		// Stopped, not failed: a load cut short by shutdown says nothing
		// of the source, and must not be logged or reported as broken.
		r.log().Info("render stopped: shutting down", "source", r.Source.String())
		return ctx.Err()
	}
	if f != nil {
		f.markServed(snap)
		r.health().Failed(f)
		err := f.Err()
		r.log().Error("render failed; "+f.outcome(snap), "source", r.Source.String(), "err", err)
		return err
	}
	pools := make([]string, 0, len(snap.names))
	for _, n := range snap.names {
		p := snap.pools[n]
		pools = append(pools, fmt.Sprintf("%s=%s@%s", n, p.result.Name, p.result.Spec))
	}
	r.log().Info("render served", "generation", snap.Generation, "pools", pools, "rerendered", snap.Rerendered, "carried", snap.Carried, "duration", time.Since(start))
	return nil
}

// reload loads, renders and swaps in what rendered; it returns how the
// render failed, or nil.
func (r *Reloader) reload(ctx context.Context) *Failure {
	in, err := r.Source.Load(ctx)
	if in != nil {
		r.health().Warned(in.Warnings)
	}
	if err != nil {
		return wholeFailure(err)
	}
	r.applyPolicy(in.SkewPolicy)
	r.health().PolicyRefused(in.SkewPolicyError)
	failed := poolsFailed(in.Failed)
	if len(in.Results) == 0 && failed != nil {
		return failed
	}
	// A source that briefly reads empty (a tree rewritten in two steps, a
	// ConfigMap mount between versions) must not drop every pool's last
	// good render; removing pools one at a time still works.
	if prev := r.Server.Snapshot(); len(in.Results) == 0 && prev != nil && len(prev.names) > 0 {
		return wholeFailure(errNoPools)
	}
	var nf render.NodeFiles
	if r.NodeFiles != nil {
		if nf, err = r.NodeFiles(); err != nil {
			return wholeFailure(err)
		}
	}
	r.gen++
	snap, err := BuildSnapshotFrom(r.Server.Snapshot(), r.gen, in.Results, in.ControllerConfig, nf)
	if err != nil {
		r.gen--
		return wholeFailure(err)
	}
	snap.keepFailed(r.Server.Snapshot(), in.Failed, in.ControllerConfig, nf)
	swapAndFill(snap, r.Server.Swap, r.Server.Snapshot)
	return failed
}

// samePolicy compares policies by what they say: their JSON is all of it.
func samePolicy(a, b *skewgate.Policy) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

var errNoPools = errors.New("the source has no pools any more; keeping the last good render of every pool")

// applyPolicy hands the gate a policy whose contents differ from the one
// it has.
func (r *Reloader) applyPolicy(p *skewgate.Policy) {
	g := r.Gate
	if p == nil || g == nil || samePolicy(g.Policy(), p) {
		return
	}
	g.SetPolicy(p)
	r.log().Info("skew policy from the source in force", "source", r.Source.String(), "mode", p.Mode)
}

// Run renders at start, then on every change from the source or trigger,
// debounced, until ctx ends. At most one load runs at a time: changes seen
// while one runs (or hangs) make one more load when it ends, never a pile of
// goroutines. Run returns once ctx has ended and the load in flight, if any,
// has returned: a caller that must not wait on a load that hangs bounds its
// wait.
func (r *Reloader) Run(ctx context.Context, trigger <-chan struct{}) {
	changed := make(chan struct{}, 1)
	go r.Source.Watch(ctx, changed)
	debounce := r.Debounce
	if debounce <= 0 {
		debounce = 200 * time.Millisecond
	}
	// Let a burst of writes (an editor, a git checkout) settle: render only
	// after a quiet period with no further change.
	settle := time.NewTimer(debounce)
	settle.Stop()
	done := make(chan struct{}, 1)
	running, pending := false, true
	for {
		if pending && !running {
			running, pending = true, false
			go func() {
				r.Reload(ctx)
				done <- struct{}{}
			}()
		}
		select {
		case <-ctx.Done():
			settle.Stop()
			if running {
				<-done
			}
			return
		case <-changed:
			settle.Reset(debounce)
		case <-trigger:
			settle.Reset(debounce)
		case <-settle.C:
			pending = true
		case <-done:
			running = false
		}
	}
}

func (r *Reloader) log() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

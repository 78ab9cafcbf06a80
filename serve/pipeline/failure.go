package pipeline

import (
	"errors"
	"maps"
	"slices"
)

// Failure is a render that failed: as a whole (Whole: no pool rendered
// anew), or in some pools only, each serving its last good render.
type Failure struct {
	err   error
	pools []PoolFailure // sorted by pool; empty when err is set
}

// PoolFailure is one pool's render failure; Served says whether the pool
// serves a render of before (a pool that never rendered serves nothing).
type PoolFailure struct {
	Pool   string
	Err    error
	Served bool
}

// Whole is why the render failed as a whole; nil when only some pools did.
func (f *Failure) Whole() error { return f.err }

// Pools are the pools whose own renders failed, sorted; none when the
// render failed as a whole.
func (f *Failure) Pools() []PoolFailure { return f.pools }

// markServed notes, for each failing pool, whether snap (the snapshot
// served after the attempt; nil: none) still serves it.
func (f *Failure) markServed(snap *Snapshot) {
	for i := range f.pools {
		f.pools[i].Served = snap != nil && snap.pools[f.pools[i].Pool] != nil
	}
}

// outcome says what is served despite f, for the log line and notices.
func (f *Failure) outcome(snap *Snapshot) string {
	if snap == nil {
		return "nothing is served until a render succeeds"
	}
	if f.err != nil {
		return "serving the last good render"
	}
	served, never := 0, 0
	for _, pf := range f.pools {
		if pf.Served {
			served++
		} else {
			never++
		}
	}
	switch {
	case never == 0:
		return "the failing pools serve their last good render"
	case served == 0:
		return "the failing pools never rendered: nothing is served for them"
	}
	return "each failing pool serves its last good render, if it ever rendered"
}

// wholeFailure is a render that failed as a whole.
func wholeFailure(err error) *Failure { return &Failure{err: err} }

// poolsFailed is the failure of the pools in failed, or nil when none did.
func poolsFailed(failed map[string]error) *Failure {
	if len(failed) == 0 {
		return nil
	}
	f := &Failure{}
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		f.pools = append(f.pools, PoolFailure{Pool: name, Err: failed[name]})
	}
	return f
}

// Err is the failure as Reload returns it and logs and /status show it.
func (f *Failure) Err() error {
	if f.err != nil {
		return f.err
	}
	errs := make([]error, len(f.pools))
	for i, pf := range f.pools {
		errs[i] = &poolError{Pool: pf.Pool, Err: pf.Err, Served: pf.Served}
	}
	return errors.Join(errs...)
}

// poolError is one pool's render failure as an error.
type poolError struct {
	Pool   string
	Err    error
	Served bool // the pool serves a render of before
}

func (e *poolError) Error() string {
	if !e.Served {
		return "pool " + e.Pool + " (never rendered: nothing is served for it): " + e.Err.Error()
	}
	return "pool " + e.Pool + " (serving its last good render): " + e.Err.Error()
}

func (e *poolError) Unwrap() error { return e.Err }

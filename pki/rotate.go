package pki

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// finishWithin bounds how long a forced rotation whose new CA is written
// keeps passing to write the rest against other writers' changes: long
// enough to outlast a controller's pass (seconds), short enough for a
// person waiting at a terminal.
const finishWithin = time.Minute

// finishBackoff paces those passes: at once after a conflict would likely
// meet the same writer still writing.
var finishBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 1 << 30, Cap: 5 * time.Second}

// unfinishedError is a forced rotation whose new CA is written (and is the
// CA in force) but whose later writes (bundle, serving certificate, token
// and user-data Secrets) did not all land.
type unfinishedError struct {
	CA     string        // the new CA's subject
	Passes int           // passes run, the forced one included
	For    time.Duration // from the first conflict to giving up
	Err    error         // why the last pass stopped
}

func (e *unfinishedError) Error() string {
	return fmt.Sprintf("the new CA %s is written and in force, but the rotation is unfinished after %d passes in %s: %v; "+
		"the next pass of a controller managing the PKI writes the rest without replacing the CA again",
		e.CA, e.Passes, e.For.Round(time.Millisecond), e.Err)
}

func (e *unfinishedError) Unwrap() error { return e.Err }

// finish completes a forced rotation whose new CA is written but whose
// pass then stopped on err: a write that met another writer's change (a
// controller's pass beside `mcs pki rotate`) is not retried by a rotation
// run once, and leaving the bundle or the serving certificate behind the
// CA until some controller's next pass is not what was asked. Passes run
// again, each reading everything anew and without force (the new CA is
// the current one now, so a pass writes what follows from it), until one
// completes or finishWithin has passed on the Manager's clock. The report
// is the last pass's, with every pass's changes and, in Problems, the
// writers met.
func (m *Manager) finish(ctx context.Context, r *Report, err error) (*Report, error) {
	ca, start, passes := r.CA.Subject, m.cfg.Now(), 1
	changes, met := r.Changes, map[string]bool{}
	b := finishBackoff
	for ce := (*conflictError)(nil); errors.As(err, &ce) && m.cfg.Now().Sub(start) < finishWithin; {
		for _, o := range ce.Objects {
			met[o] = true
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
			continue
		case <-m.after(b.Step()):
		}
		var next *Report
		next, _, err = m.pass(ctx, false, false)
		passes++
		if next != nil {
			r, changes = next, append(changes, next.Changes...)
		}
	}
	r.Changes = changes
	if err != nil {
		return r, &unfinishedError{CA: ca, Passes: passes, For: m.cfg.Now().Sub(start), Err: err}
	}
	if len(met) > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("after the new CA was written, another writer changed %s meanwhile: everything was read again and the rotation finished in %d passes, without replacing the CA again",
			strings.Join(sortedKeys(met), ", "), passes))
	}
	return r, nil
}

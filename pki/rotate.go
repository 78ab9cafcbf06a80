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

// unfinishedError is a forced rotation whose new CA is written to the CA
// Secret but whose later writes (bundle, serving certificate, token and
// user-data Secrets) did not all land.
type unfinishedError struct {
	CA     string        // the new CA's subject
	Uses   int           // the furthest writer.uses of any pass
	Passes int           // passes run, the forced one included
	For    time.Duration // from the first conflict to giving up
	Err    error         // why the last pass stopped
}

func (e *unfinishedError) Error() string {
	behind := [...]string{"the bundle and serving certificate do not use it yet", "the bundle lists it; the serving certificate does not use it yet",
		"the bundle and serving certificate use it; token or pointer Secrets are behind"}[min(e.Uses, 2)]
	return fmt.Sprintf("the CA Secret holds the new CA %s; %s: the rotation is unfinished after %d passes in %s: %v",
		e.CA, behind, e.Passes, e.For.Round(time.Millisecond), e.Err)
}

func (e *unfinishedError) Unwrap() error { return e.Err }

// Unfinished reports whether err is a forced rotation that wrote its new CA
// but not all that follows from it: a pass without force (a controller's)
// writes the rest; another forced one would replace the CA again.
func Unfinished(err error) bool {
	var ue *unfinishedError
	return errors.As(err, &ue)
}

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
func (m *Manager) finish(ctx context.Context, r *Report, uses int, err error) (*Report, error) {
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
		var w *writer
		next, w, err = m.pass(ctx, false, false)
		uses = max(uses, w.uses) // a pass failing in read or plan wrote nothing: keep the furthest progress seen
		passes++
		if next != nil {
			r, changes = next, append(changes, next.Changes...)
		}
	}
	r.Changes = changes
	if err != nil {
		return r, &unfinishedError{CA: ca, Uses: uses, Passes: passes, For: m.cfg.Now().Sub(start), Err: err}
	}
	if len(met) > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("after the new CA was written, another writer changed %s meanwhile: everything was read again and the rotation finished in %d passes, without replacing the CA again",
			strings.Join(sortedKeys(met), ", "), passes))
	}
	return r, nil
}

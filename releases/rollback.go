package releases

import (
	"errors"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/ignition-mcs/mcs/convert"
)

// ErrNoHistory is a ClusterVersion whose status.history is empty: the
// cluster-version operator has not yet recorded the release it runs.
var ErrNoHistory = errors.New("the ClusterVersion's status.history is empty")

// Ceiling is the newest spec every MachineConfig must stay at or below, so
// that the release a rollback would return to still reads it.
type Ceiling struct {
	Spec convert.Version
	// Current is the version the cluster runs or is updating to (the
	// newest history entry).
	Current string
	// Release is what sets the ceiling: the last Completed version before
	// Current, or Current itself when there is none (a fresh cluster has
	// nothing to roll back to) or it reads less.
	Release Lookup
	// Rollback is true when Release is the rollback target.
	Rollback bool
	// Reads is, of Current and the rollback target, the release whose
	// machine-config-operator reads the newer spec: the operator translates
	// every MachineConfig up to its spec and validates it there (its render
	// controller's ValidateMachineConfig), so a config valid at the spec it
	// declares must be valid at Reads.Row.Spec too.
	Reads Lookup
}

// Source says, for people, how the ceiling was found.
func (c Ceiling) Source() string {
	how := fmt.Sprintf("ClusterVersion status.history: %s is the last Completed version before %s, so a rollback returns to it", c.Release.Version, c.Current)
	if !c.Rollback {
		how = fmt.Sprintf("ClusterVersion status.history: the current release %s sets it (no Completed version before it reads less)", c.Current)
	}
	return fmt.Sprintf("spec %s: %s; %s", c.Spec, how, c.Release.source())
}

// rollbackTarget is the version a rollback would return to, given a
// ClusterVersion's status.history (newest first, as the cluster-version
// operator writes it): the last Completed version before the current one,
// the newest entry. ok is false when no earlier version completed.
func rollbackTarget(history []configv1.UpdateHistory) (version string, ok bool) {
	for _, h := range history[min(1, len(history)):] {
		if h.State == configv1.CompletedUpdate && h.Version != "" {
			return h.Version, true
		}
	}
	return "", false
}

// CeilingOf finds the ceiling a ClusterVersion's status.history implies:
// the newest spec the release a rollback would return to reads whole, or,
// with nothing to roll back to, the current release's. When the current
// release reads less than the target (a rollback under way, the history's
// newest entry the older release), the current one sets it: both must read
// every MachineConfig. Errors are ErrNoHistory and *ReleaseError.
func CeilingOf(history []configv1.UpdateHistory) (Ceiling, error) {
	if len(history) == 0 {
		return Ceiling{}, ErrNoHistory
	}
	c := Ceiling{Current: history[0].Version}
	cur, err := Find(c.Current)
	if err != nil {
		return Ceiling{}, err
	}
	c.Release, c.Spec, c.Reads = cur, cur.Row.Spec, cur
	target, ok := rollbackTarget(history)
	if !ok {
		return c, nil
	}
	back, err := Find(target)
	if err != nil {
		return Ceiling{}, err
	}
	if !cur.Row.Spec.Less(back.Row.Spec) {
		c.Release, c.Spec, c.Rollback = back, back.Row.Spec, true
	} else {
		c.Reads = back
	}
	return c, nil
}

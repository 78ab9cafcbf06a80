package releases

import (
	"errors"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/ignition-mcs/mcs/convert"
)

func TestTableOrdered(t *testing.T) {
	var prev minor
	var prevSpec convert.Version
	for i, r := range Table {
		m, err := parseMinor(r.Release)
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if i > 0 && !prev.less(m) {
			t.Errorf("row %s after %s: want releases oldest first, once each", r.Release, prev)
		}
		// A release never reads less than the one before it: Find's
		// assumption for releases newer than the table rests on it.
		if r.Spec.Less(prevSpec) {
			t.Errorf("row %s reads %s, less than %s before it", r.Release, r.Spec, prevSpec)
		}
		if !convert.IsOutputVersion(r.Spec) || r.Spec.Major != 3 {
			t.Errorf("row %s: spec %s is not a spec-3 output version", r.Release, r.Spec)
		}
		if !r.Accepts.IsZero() && !r.Spec.Less(r.Accepts) {
			t.Errorf("row %s: Accepts %s set but not above Spec %s", r.Release, r.Accepts, r.Spec)
		}
		if r.Commit == "" || !strings.HasPrefix(r.Ignition, "v2.") {
			t.Errorf("row %s: no source (commit %q, ignition %q)", r.Release, r.Commit, r.Ignition)
		}
		prev, prevSpec = m, r.Spec
	}
}

func TestFind(t *testing.T) {
	for _, c := range []struct {
		name, version string
		want          convert.Version
		assumed       bool
		err           bool
	}{
		{name: "patch", version: "4.18.7", want: convert.V3_4},
		{name: "minor only", version: "4.13", want: convert.V3_2},
		{name: "candidate", version: "4.19.0-ec.3", want: convert.V3_5},
		{name: "nightly", version: "4.14.0-0.nightly-2023-06-01-000000", want: convert.V3_4},
		{name: "first spec 3", version: "4.6.1", want: convert.V3_1},
		{name: "five", version: "5.0.0", want: convert.V3_5},
		{name: "newer than the table", version: "6.3.1", want: convert.V3_5, assumed: true},
		{name: "spec 2 only", version: "4.5.9", err: true},
		{name: "gap", version: "4.24.0", err: true},
		{name: "garbage", version: "latest", err: true},
		{name: "empty", version: "", err: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := Find(c.version)
			if c.err {
				var re *ReleaseError
				if !errors.As(err, &re) || re.Version != c.version {
					t.Fatalf("Find(%q) = %+v, %v; want a *ReleaseError", c.version, l, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.Row.Spec != c.want || l.Assumed != c.assumed {
				t.Errorf("Find(%q) = spec %s assumed %v; want %s %v", c.version, l.Row.Spec, l.Assumed, c.want, c.assumed)
			}
			if !strings.Contains(l.source(), "release-"+l.Row.Release) {
				t.Errorf("source %q does not name the branch read", l.source())
			}
		})
	}
}

func entry(version string, state configv1.UpdateState) configv1.UpdateHistory {
	return configv1.UpdateHistory{Version: version, State: state}
}

func TestCeilingOf(t *testing.T) {
	const done, partial = configv1.CompletedUpdate, configv1.PartialUpdate
	for _, c := range []struct {
		name     string
		history  []configv1.UpdateHistory
		want     convert.Version
		release  string
		rollback bool
		reads    string // the release whose operator reads the newer spec
	}{
		{name: "updated", history: []configv1.UpdateHistory{entry("4.19.2", done), entry("4.18.7", done)}, want: convert.V3_4, release: "4.18.7", rollback: true, reads: "4.19.2"},
		{name: "updating", history: []configv1.UpdateHistory{entry("4.19.2", partial), entry("4.18.7", done)}, want: convert.V3_4, release: "4.18.7", rollback: true, reads: "4.19.2"},
		{name: "skips partial", history: []configv1.UpdateHistory{entry("4.19.2", done), entry("4.18.9", partial), entry("4.17.1", done)}, want: convert.V3_4, release: "4.17.1", rollback: true, reads: "4.19.2"},
		{name: "z-stream", history: []configv1.UpdateHistory{entry("4.19.3", done), entry("4.19.2", done)}, want: convert.V3_5, release: "4.19.2", rollback: true, reads: "4.19.3"},
		{name: "fresh", history: []configv1.UpdateHistory{entry("4.19.2", done)}, want: convert.V3_5, release: "4.19.2", reads: "4.19.2"},
		{name: "installing", history: []configv1.UpdateHistory{entry("4.19.2", partial)}, want: convert.V3_5, release: "4.19.2", reads: "4.19.2"},
		{name: "rolling back", history: []configv1.UpdateHistory{entry("4.18.7", partial), entry("4.19.2", done), entry("4.18.7", done)}, want: convert.V3_4, release: "4.18.7", reads: "4.19.2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := CeilingOf(c.history)
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec != c.want || got.Release.Version != c.release || got.Rollback != c.rollback {
				t.Errorf("CeilingOf = %s from %s (rollback %v); want %s from %s (rollback %v)", got.Spec, got.Release.Version, got.Rollback, c.want, c.release, c.rollback)
			}
			if got.Reads.Version != c.reads {
				t.Errorf("the operator reading the newer spec: %s's, want %s's", got.Reads.Version, c.reads)
			}
			if s := got.Source(); !strings.Contains(s, c.release) || !strings.Contains(s, "status.history") {
				t.Errorf("source %q names neither the release nor the history", s)
			}
		})
	}
}

func TestCeilingOfErrors(t *testing.T) {
	if _, err := CeilingOf(nil); !errors.Is(err, ErrNoHistory) {
		t.Errorf("empty history: %v, want ErrNoHistory", err)
	}
	var re *ReleaseError
	_, err := CeilingOf([]configv1.UpdateHistory{entry("4.19.2", configv1.CompletedUpdate), entry("4.5.3", configv1.CompletedUpdate)})
	if !errors.As(err, &re) || re.Version != "4.5.3" {
		t.Errorf("spec-2 rollback target: %v, want a *ReleaseError naming 4.5.3", err)
	}
}

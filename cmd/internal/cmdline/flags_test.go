package cmdline

import (
	"flag"
	"io"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
)

// A spec flag refuses what cannot be written as it is parsed, and shows
// the value it was defined with as its default.
func TestVersion(t *testing.T) {
	v := convert.V3_0
	var none convert.Version
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(Version(&v), "min-spec", "lowest")
	fs.Var(Version(&none), "spec", "exact")
	if d := fs.Lookup("min-spec").DefValue; d != "3.0.0" {
		t.Errorf("default %q, want 3.0.0", d)
	}
	if d := fs.Lookup("spec").DefValue; d != "" {
		t.Errorf("default of an unset version %q, want empty", d)
	}
	for _, bad := range []string{"2.4.0", "3.9.0", "three"} {
		if err := fs.Parse([]string{"--min-spec", bad}); err == nil || v != convert.V3_0 {
			t.Errorf("--min-spec %s: %v, version %s", bad, err, v)
		}
	}
	if err := fs.Parse([]string{"--min-spec", "3.2.0", "--spec", "2.2.0"}); err != nil || v != convert.V3_2 || none != convert.V2_2 {
		t.Errorf("parse: %v, %s, %s", err, v, none)
	}
	// Empty, as a template writes an unset value: no version, the default.
	if err := fs.Parse([]string{"--min-spec=", "--spec", " "}); err != nil || !v.IsZero() || !none.IsZero() {
		t.Errorf("empty values: %v, %s, %s", err, v, none)
	}
}

package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestDescribe(t *testing.T) {
	set := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name, version string
		settings      []debug.BuildSetting
		want          string
	}{
		{"stamped", "v0.0.0-20261124200000-0123456789ab", set("vcs.revision", "0123456789abcdef", "vcs.time", "2026-11-24T20:00:00Z"),
			"v0.0.0-20261124200000-0123456789ab (revision 0123456789abcdef, 2026-11-24T20:00:00Z)"},
		{"modified", "(devel)", set("vcs.revision", "abc", "vcs.modified", "true"), "(devel) (revision abc, modified)"},
		{"unstamped", "", nil, "(devel) (no VCS revision: built with -buildvcs=false or outside a git checkout; make build stamps it)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bi := &debug.BuildInfo{Main: debug.Module{Version: tc.version}, Settings: tc.settings}
			if got := describe(bi); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

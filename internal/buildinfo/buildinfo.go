// Package buildinfo names the build of mcs that runs: the module version and VCS revision Go stamps into the binary.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// String is "VERSION (revision REV, TIME[, modified])": Go's build info,
// read by every command's --version. A binary built without VCS stamping
// (go build -buildvcs=false, or outside a git checkout) says so rather than
// printing nothing.
func String() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build info in the binary)"
	}
	return describe(bi)
}

func describe(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	s := map[string]string{}
	for _, x := range bi.Settings {
		s[x.Key] = x.Value
	}
	rev := s["vcs.revision"]
	if rev == "" {
		return v + " (no VCS revision: built with -buildvcs=false or outside a git checkout; make build stamps it)"
	}
	parts := []string{"revision " + rev}
	if t := s["vcs.time"]; t != "" {
		parts = append(parts, t)
	}
	if s["vcs.modified"] == "true" {
		parts = append(parts, "modified")
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}

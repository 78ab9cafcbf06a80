package skewgate

import (
	"slices"
	"strconv"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
)

// IgnitionVersion is a client's Ignition release, from its User-Agent.
type IgnitionVersion struct{ Major, Minor, Patch int }

func (v IgnitionVersion) String() string {
	return "v" + strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor) + "." + strconv.Itoa(v.Patch)
}

func (v IgnitionVersion) less(o IgnitionVersion) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor < o.Minor
	}
	return v.Patch < o.Patch
}

// releases maps each Ignition release that first read a spec to that spec
// (reference: the spec table). Ignition reads every older spec of its major
// too; v0.x reads spec 2 (served as 2.2.0).
var releases = []ReleaseLine{
	{IgnitionVersion{0, 0, 0}, convert.V2_2},
	{IgnitionVersion{2, 0, 0}, convert.V3_0},
	{IgnitionVersion{2, 3, 0}, convert.V3_1},
	{IgnitionVersion{2, 7, 0}, convert.V3_2},
	{IgnitionVersion{2, 11, 0}, convert.V3_3},
	{IgnitionVersion{2, 15, 0}, convert.V3_4},
	{IgnitionVersion{2, 20, 0}, convert.V3_5},
	{IgnitionVersion{2, 26, 0}, convert.V3_6},
}

// ReleaseLine is a line of Ignition releases: its first release and the
// newest spec the line reads.
type ReleaseLine struct {
	Ignition IgnitionVersion
	Spec     convert.Version
}

// ReleaseLines lists the release lines, oldest first, for tools that ask
// what a node of each would receive (render diff).
func ReleaseLines() []ReleaseLine { return slices.Clone(releases) }

// SpecFor returns the newest spec an Ignition release reads (serve uses it
// for Ignition v2.0.x, whose Accept names spec 2.2).
func SpecFor(v IgnitionVersion) convert.Version {
	spec := convert.V2_2
	for _, r := range releases {
		if !v.less(r.Ignition) {
			spec = r.Spec
		}
	}
	return spec
}

// firstReader returns the oldest Ignition release that reads spec s.
func firstReader(s convert.Version) (IgnitionVersion, bool) {
	for _, r := range releases {
		if r.Spec == s {
			return r.Ignition, true
		}
	}
	return IgnitionVersion{}, false
}

// ParseUserAgent reads what Ignition sends: "Ignition/v" and its git
// version ("v2.27.0", "v2.14.0-3-gabc1234"), numbers of 1–9 digits,
// optionally followed by a "-", "+" or " " and more; ok is false for
// anything else. It is the one reading of User-Agents (the server's metrics
// label them with it too), and every config request asks it, so it scans
// by hand: a regular expression here cost the request path more than its
// routing (pprof).
func ParseUserAgent(ua string) (IgnitionVersion, bool) {
	rest, ok := strings.CutPrefix(ua, "Ignition/v")
	if !ok {
		return IgnitionVersion{}, false
	}
	var v [3]int
	for i := range v {
		n := 0
		for n < len(rest) && n < 10 && '0' <= rest[n] && rest[n] <= '9' {
			v[i] = v[i]*10 + int(rest[n]-'0')
			n++
		}
		if n == 0 || n > 9 {
			return IgnitionVersion{}, false
		}
		rest = rest[n:]
		if i < 2 {
			if rest == "" || rest[0] != '.' {
				return IgnitionVersion{}, false
			}
			rest = rest[1:]
		}
	}
	if rest != "" && rest[0] != '-' && rest[0] != '+' && rest[0] != ' ' {
		return IgnitionVersion{}, false
	}
	return IgnitionVersion{v[0], v[1], v[2]}, true
}

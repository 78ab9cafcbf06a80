// Package convert parses Ignition configs of any supported spec, finds the lowest spec a config needs and translates it between specs, proving every step lossless.
package convert

import (
	"fmt"
	"strings"

	"github.com/coreos/go-semver/semver"
)

// Version is an Ignition spec version.
type Version struct {
	Major, Minor, Patch int64
}

// Well-known versions, named so call sites read like the spec table.
var (
	V2_2 = Version{2, 2, 0}
	V3_0 = Version{3, 0, 0}
	V3_1 = Version{3, 1, 0}
	V3_2 = Version{3, 2, 0}
	V3_3 = Version{3, 3, 0}
	V3_4 = Version{3, 4, 0}
	V3_5 = Version{3, 5, 0}
	V3_6 = Version{3, 6, 0}
)

// Newest is the newest stable spec: the internal form every config is held in.
var Newest = V3_6

// OutputVersions lists, oldest first, every spec translate can write. It is the
// one list that dispatch, tests, the CLI's help and the server's negotiation use.
var OutputVersions = []Version{V2_2, V3_0, V3_1, V3_2, V3_3, V3_4, V3_5, V3_6}

// inputVersions lists every spec Parse accepts (Butane is detected by its variant).
var inputVersions = []Version{
	{2, 0, 0}, {2, 1, 0}, V2_2, {2, 3, 0}, {2, 4, 0},
	V3_0, V3_1, V3_2, V3_3, V3_4, V3_5, V3_6,
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// MarshalText lets versions appear as "3.2.0" in JSON status documents.
func (v Version) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText accepts what ParseVersion accepts.
func (v *Version) UnmarshalText(b []byte) error {
	p, err := ParseVersion(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// Less reports whether v is an older spec than o.
func (v Version) Less(o Version) bool { return v.compare(o) < 0 }

// compare returns -1, 0 or 1 as v is older than, equal to or newer than o.
func (v Version) compare(o Version) int {
	for _, d := range [3]int64{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		switch {
		case d < 0:
			return -1
		case d > 0:
			return 1
		}
	}
	return 0
}

// IsZero reports whether v is unset.
func (v Version) IsZero() bool { return v == Version{} }

// ParseVersion reads "X.Y.Z" (a full semantic version, as Ignition requires).
func ParseVersion(s string) (Version, error) {
	sv, err := semver.NewVersion(strings.TrimSpace(s))
	if err != nil {
		return Version{}, fmt.Errorf("invalid spec version %q: want X.Y.Z", s)
	}
	if sv.PreRelease != "" || sv.Metadata != "" {
		return Version{int64(sv.Major), int64(sv.Minor), int64(sv.Patch)}, &UnsupportedVersionError{Version: s}
	}
	return Version{int64(sv.Major), int64(sv.Minor), int64(sv.Patch)}, nil
}

// ParseOutputVersion reads a version and checks that translate can write it.
func ParseOutputVersion(s string) (Version, error) {
	v, err := ParseVersion(s)
	if err != nil {
		return Version{}, err
	}
	if !IsOutputVersion(v) {
		return Version{}, &UnsupportedVersionError{Version: s, Output: true}
	}
	return v, nil
}

// IsOutputVersion reports whether translate can write v.
func IsOutputVersion(v Version) bool { return contains(OutputVersions, v) }

func contains(vs []Version, v Version) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// VersionList is vs as people read it: "3.0.0, 3.1.0, 3.2.0".
func VersionList(vs []Version) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	return strings.Join(s, ", ")
}

// featureLevel is the spec-3 version whose features a target can hold: spec 2.2
// holds no more than 3.0 does (and less, see spec2Blockers).
func featureLevel(target Version) Version {
	if target.Major == 2 {
		return V3_0
	}
	return target
}

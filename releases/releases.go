// Package releases knows which Ignition spec each OpenShift release's machine-config-operator reads, and which release a rollback would return to.
package releases

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
)

// Row is one OpenShift minor release and the newest Ignition spec its
// machine-config-operator keeps whole. The operator parses every
// MachineConfig with IgnParseWrapper (pkg/controller/common/helpers.go) into
// its internal spec and refuses what does not parse: a MachineConfig above
// Spec breaks that release's render controller, daemon and server.
type Row struct {
	Release string // "4.14": major and minor only
	// Spec is the newest spec whose every field the release keeps: its
	// internal types (ign3types), the spec its render controller writes.
	Spec convert.Version
	// Accepts is the newest version label it parses, when above Spec:
	// 4.13 parses labels up to 3.4 but translates them down to 3.2, so a
	// 3.3 or 3.4 field fails there.
	Accepts convert.Version
	// Ignition is the github.com/coreos/ignition/v2 version its go.mod pins.
	Ignition string
	// Commit is the head of its release branch that was read.
	Commit string
}

// source says where a row's facts were read.
func (r Row) source() string {
	return fmt.Sprintf("openshift/machine-config-operator release-%s at %s: go.mod pins ignition/v2 %s; pkg/controller/common/helpers.go IgnParseWrapper parses into spec %s", r.Release, r.Commit, r.Ignition, r.Spec)
}

// Table lists, oldest first, every OpenShift release since the first to
// read spec 3 (4.6; before it, spec 2.2 only). Read from the operator's
// release branches on 2026-11-27 (main was 7ff337a4ffac, which writes
// 3.5.0; its open PR #6236 would write 3.6.0). It is the one table of the
// project: the webhook's, the server's and the render CLI's ceilings come
// from it.
var Table = []Row{
	{Release: "4.6", Spec: convert.V3_1, Ignition: "v2.3.0", Commit: "348938f0ce49"},
	{Release: "4.7", Spec: convert.V3_2, Ignition: "v2.7.0", Commit: "9bbeff52a9fe"},
	{Release: "4.8", Spec: convert.V3_2, Ignition: "v2.7.0", Commit: "38ffe7535a18"},
	{Release: "4.9", Spec: convert.V3_2, Ignition: "v2.7.0", Commit: "850ad08672f3"},
	{Release: "4.10", Spec: convert.V3_2, Ignition: "v2.7.0", Commit: "46b93e64dea6"},
	{Release: "4.11", Spec: convert.V3_2, Ignition: "v2.13.0", Commit: "15d0b0288a43"},
	{Release: "4.12", Spec: convert.V3_2, Ignition: "v2.13.0", Commit: "1d4cfffaad8d"},
	{Release: "4.13", Spec: convert.V3_2, Accepts: convert.V3_4, Ignition: "v2.15.0", Commit: "a57ca2912354"},
	{Release: "4.14", Spec: convert.V3_4, Ignition: "v2.15.0", Commit: "00b2e0b1cc83"},
	{Release: "4.15", Spec: convert.V3_4, Ignition: "v2.15.0", Commit: "1ffa8341fb18"},
	{Release: "4.16", Spec: convert.V3_4, Ignition: "v2.15.0", Commit: "7327bb2359dd"},
	{Release: "4.17", Spec: convert.V3_4, Ignition: "v2.15.0", Commit: "3bdd678e83da"},
	{Release: "4.18", Spec: convert.V3_4, Ignition: "v2.15.0", Commit: "f313997e0ba8"},
	{Release: "4.19", Spec: convert.V3_5, Ignition: "v2.20.0", Commit: "1a6905d980fd"},
	{Release: "4.20", Spec: convert.V3_5, Ignition: "v2.20.0", Commit: "afed09939d80"},
	{Release: "4.21", Spec: convert.V3_5, Ignition: "v2.20.0", Commit: "db84d8368ef7"},
	{Release: "4.22", Spec: convert.V3_5, Ignition: "v2.20.0", Commit: "9027c94cde45"},
	// From here the module pins an Ignition that reads 3.6, but the operator
	// still parses with v3_5.ParseCompatibleVersion: 3.6 is refused.
	{Release: "4.23", Spec: convert.V3_5, Ignition: "v2.26.0", Commit: "d20efd9b9bdb"},
	{Release: "5.0", Spec: convert.V3_5, Ignition: "v2.26.0", Commit: "d20efd9b9bdb"},
	{Release: "5.1", Spec: convert.V3_5, Ignition: "v2.26.0", Commit: "7ff337a4ffac"},
	{Release: "5.2", Spec: convert.V3_5, Ignition: "v2.26.0", Commit: "7ff337a4ffac"},
}

// minor is a release's major and minor numbers.
type minor struct{ major, minor int }

func (m minor) String() string { return fmt.Sprintf("%d.%d", m.major, m.minor) }

func (m minor) less(o minor) bool {
	return m.major < o.major || m.major == o.major && m.minor < o.minor
}

// parseMinor reads the major and minor of an OpenShift version as the
// ClusterVersion writes it: "4.19.2", "4.20.0-ec.3",
// "4.19.0-0.nightly-2025-06-01-000000", or just "4.19".
func parseMinor(v string) (minor, error) {
	parts := strings.SplitN(strings.TrimPrefix(strings.TrimSpace(v), "v"), ".", 3)
	if len(parts) < 2 {
		return minor{}, fmt.Errorf("%q is not an OpenShift version like 4.19.2", v)
	}
	parts[1], _, _ = strings.Cut(parts[1], "-")
	maj, err1 := strconv.Atoi(parts[0])
	mnr, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || maj < 0 || mnr < 0 {
		return minor{}, fmt.Errorf("%q is not an OpenShift version like 4.19.2", v)
	}
	return minor{maj, mnr}, nil
}

// ReleaseError is a release the table cannot place.
type ReleaseError struct {
	Version string
	Reason  string
}

func (e *ReleaseError) Error() string {
	return fmt.Sprintf("OpenShift release %q: %s", e.Version, e.Reason)
}

// Lookup is what the table says of one OpenShift version.
type Lookup struct {
	Version string // as asked for, e.g. "4.18.7"
	Row     Row
	// Assumed is true when Version is newer than the table's newest row,
	// whose Spec is then taken: no release has read less than the one
	// before it, so it is the newest spec such a release surely reads.
	Assumed bool
}

// source says where the answer comes from.
func (l Lookup) source() string {
	if l.Assumed {
		return fmt.Sprintf("release %s is newer than the table's newest row (%s); assumed to read at least what %s reads (%s)", l.Version, l.Row.Release, l.Row.Release, l.Row.source())
	}
	return l.Row.source()
}

// NewestSpec is the newest spec any release of Table reads, its newest
// row's (no release reads less than the one before it): what a cluster
// whose release is not known may read (one newer than the table is
// assumed to read that much, see Lookup.Assumed).
func NewestSpec() convert.Version { return Table[len(Table)-1].Spec }

// Find looks an OpenShift version up in Table. A version before 4.6 (spec
// 2.2 only) or one that does not parse is a *ReleaseError.
func Find(version string) (Lookup, error) {
	m, err := parseMinor(version)
	if err != nil {
		return Lookup{}, &ReleaseError{Version: version, Reason: err.Error()}
	}
	first, _ := parseMinor(Table[0].Release)
	if m.less(first) {
		return Lookup{}, &ReleaseError{Version: version, Reason: fmt.Sprintf("releases before %s read Ignition spec 2.2 only", first)}
	}
	for _, r := range Table {
		if rm, _ := parseMinor(r.Release); rm == m {
			return Lookup{Version: version, Row: r}, nil
		}
	}
	last := Table[len(Table)-1]
	if lm, _ := parseMinor(last.Release); lm.less(m) {
		return Lookup{Version: version, Row: last, Assumed: true}, nil
	}
	return Lookup{}, &ReleaseError{Version: version, Reason: "not in the table of releases"}
}

// Readers are who read a MachineConfig stored while the cluster's
// machine-config-operator reads spec reads (zero: not known, NewestSpec)
// and a rollback returns to a release reading ceiling (zero: none): the
// operators of both, each through Ignition's own ParseCompatibleVersion at
// its spec (ParseAndConvertConfig; the daemon reads rendered configs the
// same way). What mcs stores is judged by them (convert.Judge).
func Readers(ceiling, reads convert.Version) []convert.Reader {
	who := "the cluster's machine-config-operator"
	if reads.IsZero() {
		reads, who = NewestSpec(), "OpenShift's machine-config-operator (of the newest release known)"
	}
	out := []convert.Reader{{Spec: reads, Who: who}}
	if !ceiling.IsZero() {
		out = append(out, convert.Reader{Spec: ceiling, Who: "the machine-config-operator of the release a rollback returns to"})
	}
	return out
}

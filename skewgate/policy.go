package skewgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/ignition-mcs/mcs/internal/intake"
	"github.com/ignition-mcs/mcs/internal/regularfile"
	"github.com/ignition-mcs/mcs/internal/text"
)

// Policy is shaped like OpenShift's MachineConfiguration
// spec.bootImageSkewEnforcement, plus the release's limits and optional
// per-pool minimum Ignition versions.
type Policy struct {
	// Mode is Manual, None or Automatic; empty means no policy beyond the
	// rule that always applies (a client that cannot read its config).
	Mode   string        `json:"mode,omitempty"`
	Manual *ManualPolicy `json:"manual,omitempty"`
	// Release holds the oldest boot image this release supports.
	Release ReleaseLimits `json:"release,omitempty"`
	// MinIgnitionVersion maps a pool ("*" for every pool) to the oldest
	// Ignition release allowed to join it, e.g. "2.15.0".
	MinIgnitionVersion map[string]string `json:"minIgnitionVersion,omitempty"`
	// ClusterStatus is the enforcement OpenShift's machine-config-operator
	// computed (the MachineConfiguration's
	// status.bootImageSkewEnforcementStatus), shown beside the gate's own
	// findings; nil when the policy did not come from a cluster that has
	// one. The gate decides by the fields above.
	ClusterStatus *EnforcementStatus `json:"clusterStatus,omitempty"`

	minIgnition map[string]IgnitionVersion
}

// EnforcementStatus is a MachineConfiguration's
// status.bootImageSkewEnforcementStatus: the mode in force (Automatic,
// Manual, None) and the boot image the operator last recorded, the
// automatic or the manual one.
type EnforcementStatus struct {
	Mode         string `json:"mode"`
	ManualMode   string `json:"manualMode,omitempty"` // OCPVersion or RHCOSVersion
	OCPVersion   string `json:"ocpVersion,omitempty"`
	RHCOSVersion string `json:"rhcosVersion,omitempty"`
}

// enforcementStatus reads status.bootImageSkewEnforcementStatus leniently
// (it is the operator's report, not a policy to refuse): nil when absent
// or unreadable.
func enforcementStatus(js json.RawMessage) *EnforcementStatus {
	if isNull(js) {
		return nil
	}
	var st struct {
		Mode      string `json:"mode"`
		Automatic struct {
			OCPVersion   string `json:"ocpVersion"`
			RHCOSVersion string `json:"rhcosVersion"`
		} `json:"automatic"`
		Manual struct {
			Mode         string `json:"mode"`
			OCPVersion   string `json:"ocpVersion"`
			RHCOSVersion string `json:"rhcosVersion"`
		} `json:"manual"`
	}
	if json.Unmarshal(js, &st) != nil || st.Mode == "" {
		return nil
	}
	es := &EnforcementStatus{Mode: st.Mode, OCPVersion: st.Automatic.OCPVersion, RHCOSVersion: st.Automatic.RHCOSVersion}
	if st.Mode == "Manual" {
		es.ManualMode, es.OCPVersion, es.RHCOSVersion = st.Manual.Mode, st.Manual.OCPVersion, st.Manual.RHCOSVersion
	}
	return es
}

// ManualPolicy records the boot image the cluster's machines boot from.
type ManualPolicy struct {
	Mode         string `json:"mode"` // OCPVersion or RHCOSVersion
	OCPVersion   string `json:"ocpVersion,omitempty"`
	RHCOSVersion string `json:"rhcosVersion,omitempty"`
}

// ReleaseLimits are the oldest boot image versions a release supports.
type ReleaseLimits struct {
	OCPVersion   string `json:"ocpVersion,omitempty"`
	RHCOSVersion string `json:"rhcosVersion,omitempty"`
}

// policyMax bounds a policy file: a MachineConfiguration is a few KiB.
const policyMax = 1 << 20

// defaultRelease is today's limit (reference: OCP 4.13.0, RHCOS 9.2).
var defaultRelease = ReleaseLimits{OCPVersion: "4.13.0", RHCOSVersion: "9.2"}

// LoadPolicy reads a policy file (YAML or JSON). A bare policy, a
// MachineConfiguration object, or {spec: {bootImageSkewEnforcement: ...}}
// are all accepted.
//
// Only a regular file is opened (a FIFO would hang the reload), and one
// anyone may write is refused: whoever writes the policy decides which
// nodes may join.
func LoadPolicy(path string) (*Policy, error) {
	raw, info, err := regularfile.ReadFile(path, policyMax)
	if err != nil {
		return nil, fmt.Errorf("reading skew policy: %w", err)
	}
	if m := info.Mode().Perm(); m&0o002 != 0 {
		return nil, fmt.Errorf("reading skew policy: %s: writable by anyone (mode %04o): chmod o-w it", path, m)
	}
	p, err := ParsePolicy(raw)
	var fe *fieldError
	if errors.As(err, &fe) {
		if line := yamlLine(raw, fe.path); line > 0 {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// fieldError is a policy problem at a JSON path, so that LoadPolicy can
// name the line of the user's file.
type fieldError struct {
	path []string // from the document's top
	msg  string
}

func (e *fieldError) Error() string {
	return "$" + strings.Join(append([]string{""}, e.path...), ".") + ": " + e.msg
}

// at is a fieldError at prefix's path and then path.
func at(prefix []string, msg string, path ...string) error {
	return &fieldError{path: append(slices.Clip(prefix), path...), msg: msg}
}

// yamlLine is the line of the field at path in a YAML (or JSON) document,
// or 0.
func yamlLine(raw []byte, path []string) int {
	var doc yaml.Node
	if yaml.Unmarshal(raw, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	return intake.Line(doc.Content[0], path)
}

// policyFields are the fields of a bare policy and of its objects.
var policyFields = map[string][]string{
	"":        {"mode", "manual", "release", "minIgnitionVersion"},
	"manual":  {"mode", "ocpVersion", "rhcosVersion"},
	"release": {"ocpVersion", "rhcosVersion"},
}

// unknownField is the first field of a bare policy, by path, that a
// policy does not have: refused at its path with the field likely meant,
// not encoding/json's "unknown field" at the top whatever its depth.
func unknownField(js []byte) error {
	var top map[string]json.RawMessage
	if json.Unmarshal(js, &top) != nil {
		return nil // the decode says why
	}
	for _, obj := range []string{"", "manual", "release"} {
		var fields map[string]json.RawMessage
		if obj == "" {
			fields = top
		} else if json.Unmarshal(top[obj], &fields) != nil {
			continue
		}
		known := policyFields[obj]
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			if slices.Contains(known, k) {
				continue
			}
			msg := "unknown field " + k
			if m := text.Closest(k, known); m != "" {
				msg += " (did you mean " + m + "?)"
			}
			path := []string{obj, k}
			if obj == "" {
				path = path[1:]
			}
			holder := "a skew policy"
			if obj != "" {
				holder = obj
			}
			return at(nil, msg+": "+holder+" holds only "+strings.Join(known[:len(known)-1], ", ")+" and "+known[len(known)-1], path...)
		}
	}
	return nil
}

// ParsePolicy parses and validates a policy document.
func ParsePolicy(raw []byte) (*Policy, error) {
	js, err := intake.YAMLToJSON(raw, 1)
	if err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	// A Kubernetes object (a MachineConfiguration as kubectl prints it) is
	// told from a bare policy by its kind or spec. Its policy is
	// spec.bootImageSkewEnforcement; without one, the mode the MCO put in
	// status.bootImageSkewEnforcementStatus (the default it chose, such as
	// Automatic); without either, none. Fields this reader does not know
	// are ignored there: a newer cluster must not make an older mcs drop
	// its policy.
	var probe struct {
		Kind *string `json:"kind"`
		Spec *struct {
			BootImageSkewEnforcement json.RawMessage `json:"bootImageSkewEnforcement"`
		} `json:"spec"`
		Status *struct {
			BootImageSkewEnforcementStatus json.RawMessage `json:"bootImageSkewEnforcementStatus"`
		} `json:"status"`
	}
	if err := json.Unmarshal(js, &probe); err != nil {
		return nil, fmt.Errorf("$: %w", err)
	}
	var prefix []string // where the policy sits in the document
	strict := true
	if probe.Kind != nil || probe.Spec != nil {
		if probe.Kind != nil && *probe.Kind != "MachineConfiguration" {
			return nil, at(nil, fmt.Sprintf("%q is not MachineConfiguration", *probe.Kind), "kind")
		}
		js, prefix, strict = []byte("{}"), []string{"spec", "bootImageSkewEnforcement"}, false
		switch {
		case probe.Spec != nil && !isNull(probe.Spec.BootImageSkewEnforcement):
			js = probe.Spec.BootImageSkewEnforcement
		case probe.Status != nil && !isNull(probe.Status.BootImageSkewEnforcementStatus):
			js, prefix = probe.Status.BootImageSkewEnforcementStatus, []string{"status", "bootImageSkewEnforcementStatus"}
		}
	}
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(js))
	if strict {
		if err := unknownField(js); err != nil {
			return nil, err
		}
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, at(prefix, fmt.Sprintf("want a %s, got %s", te.Type, withArticle(te.Value)), strings.Split(te.Field, ".")...)
		}
		return nil, at(prefix, err.Error())
	}
	if err := p.validate(prefix); err != nil {
		return nil, err
	}
	if probe.Status != nil {
		p.ClusterStatus = enforcementStatus(probe.Status.BootImageSkewEnforcementStatus)
	}
	return &p, nil
}

func isNull(js json.RawMessage) bool {
	return len(js) == 0 || string(js) == "null"
}

func (p *Policy) validate(prefix []string) error {
	switch p.Mode {
	case "", "None", "Automatic":
	case "Manual":
		if p.Manual == nil {
			return at(prefix, "required when mode is Manual", "manual")
		}
		switch p.Manual.Mode {
		case "OCPVersion":
			if _, err := parseOCP(p.Manual.OCPVersion); err != nil {
				return at(prefix, err.Error(), "manual", "ocpVersion")
			}
		case "RHCOSVersion":
			if _, err := parseRHCOS(p.Manual.RHCOSVersion); err != nil {
				return at(prefix, err.Error(), "manual", "rhcosVersion")
			}
		default:
			return at(prefix, fmt.Sprintf("%q is not OCPVersion or RHCOSVersion", p.Manual.Mode), "manual", "mode")
		}
	default:
		return at(prefix, fmt.Sprintf("%q is not Manual, None or Automatic", p.Mode), "mode")
	}
	if p.Release.OCPVersion == "" {
		p.Release.OCPVersion = defaultRelease.OCPVersion
	}
	if p.Release.RHCOSVersion == "" {
		p.Release.RHCOSVersion = defaultRelease.RHCOSVersion
	}
	if _, err := parseOCP(p.Release.OCPVersion); err != nil {
		return at(prefix, err.Error(), "release", "ocpVersion")
	}
	if _, err := parseRHCOS(p.Release.RHCOSVersion); err != nil {
		return at(prefix, err.Error(), "release", "rhcosVersion")
	}
	p.minIgnition = map[string]IgnitionVersion{}
	for pool, s := range p.MinIgnitionVersion {
		v, ok := ParseUserAgent("Ignition/v" + strings.TrimPrefix(s, "v"))
		if !ok {
			return at(prefix, fmt.Sprintf("%q is not an Ignition version like 2.15.0", s), "minIgnitionVersion", pool)
		}
		p.minIgnition[pool] = v
	}
	return nil
}

// ocpVersion is major.minor.patch of an OpenShift release.
type ocpVersion [3]int

var ocpRe = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?$`)

func parseOCP(s string) (ocpVersion, error) {
	m := ocpRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return ocpVersion{}, fmt.Errorf("%q is not an OpenShift version like 4.13.0", s)
	}
	var v ocpVersion
	for i := 0; i < 3; i++ {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, nil
}

func (a ocpVersion) less(b ocpVersion) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func (a ocpVersion) String() string { return fmt.Sprintf("%d.%d.%d", a[0], a[1], a[2]) }

// rhcos is a boot image version: the RHEL release it is built on and a build
// stamp. Both forms are read: "9.6.20251023-0" (RHEL 9.6) and the legacy
// "48.84.202208021106-0" (OCP 4.8 on RHEL 8.4).
type rhcos struct {
	RHELMajor, RHELMinor int
	Build                string // date stamp and serial; "" in a limit like "9.2"
	Raw                  string
}

var (
	// New: RHEL major.minor, then an 8-digit date. Legacy: OCP 4.x and RHEL
	// as two digit runs ("48" = OCP 4.8, "84" = RHEL 8.4), then a 12-digit stamp.
	rhcosNew    = regexp.MustCompile(`^(\d{1,2})\.(\d{1,2})(?:\.(\d{8}-\d+))?$`)
	rhcosLegacy = regexp.MustCompile(`^(4)(\d{1,2})\.(\d)(\d{1,2})(?:\.(\d{12}-\d+))?$`)
)

// parseRHCOS reads an RHCOS version in either form.
func parseRHCOS(s string) (rhcos, error) {
	s = strings.TrimSpace(s)
	if m := rhcosLegacy.FindStringSubmatch(s); m != nil {
		major, _ := strconv.Atoi(m[3])
		minor, _ := strconv.Atoi(m[4])
		return rhcos{RHELMajor: major, RHELMinor: minor, Build: m[5], Raw: s}, nil
	}
	if m := rhcosNew.FindStringSubmatch(s); m != nil {
		major, _ := strconv.Atoi(m[1])
		minor, _ := strconv.Atoi(m[2])
		if major < 8 || major > 40 {
			return rhcos{}, fmt.Errorf("%q is not an RHCOS version: no RHCOS is built on RHEL %d", s, major)
		}
		return rhcos{RHELMajor: major, RHELMinor: minor, Build: m[3], Raw: s}, nil
	}
	return rhcos{}, fmt.Errorf("%q is not an RHCOS version like 9.6.20251023-0 or 48.84.202208021106-0", s)
}

// Less compares RHEL release first, then the build stamp when both have one.
func (a rhcos) Less(b rhcos) bool {
	if a.RHELMajor != b.RHELMajor {
		return a.RHELMajor < b.RHELMajor
	}
	if a.RHELMinor != b.RHELMinor {
		return a.RHELMinor < b.RHELMinor
	}
	if a.Build == "" || b.Build == "" {
		return false
	}
	return a.Build < b.Build
}

func (a rhcos) RHEL() string { return fmt.Sprintf("RHEL %d.%d", a.RHELMajor, a.RHELMinor) }

// withArticle is "an array", "a number": encoding/json's names of a JSON
// value's kind, for people.
func withArticle(kind string) string {
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

package stored

import (
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/convert"
)

// Report is what a pass found: the webhook's /status section "stored".
type Report struct {
	// Ceiling is the newest spec the rollback release parses; zero when
	// none is known (then Unreadable lists what is stored above its
	// lowest spec).
	Ceiling convert.Version `json:"ceiling,omitzero"`
	// Checked is how many MachineConfigs were read.
	Checked int `json:"checked"`
	// Pools counts Unreadable per pool: every pool, zeros included, and
	// noPool when some belong to none.
	Pools map[string]int `json:"pools"`
	// Unreadable lists them, by name.
	Unreadable []Finding `json:"unreadable"`
}

func (r *Report) total() int { return len(r.Unreadable) }

// Finding is one stored MachineConfig the rollback release cannot parse.
type Finding struct {
	Name  string   `json:"name"`
	Pools []string `json:"pools"`
	// Stored is the spec it is stored at ("" when spec.config declares
	// none that parses).
	Stored string `json:"stored"`
	// Lowest is the lowest spec the webhook's conversion stores it at: at
	// or below the ceiling, `mcs admit lower-existing` fixes it.
	Lowest string `json:"lowest,omitempty"`
	// Fixable says lower-existing stores it at a spec the rollback
	// release parses.
	Fixable bool `json:"fixable"`
	// Forces names the fields that force Lowest, each with the spec it
	// needs ("$.kernelArguments.shouldExist: kernel arguments need spec
	// 3.3.0"): those above the ceiling when it is not Fixable.
	Forces []string `json:"forces,omitempty"`
	// Problem says why it could not be converted, when it could not.
	Problem string `json:"problem,omitempty"`
}

// String is the finding as a line for people.
func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (pool %s): stored at %s", f.Name, strings.Join(f.Pools, ", "), orNone(f.Stored))
	switch {
	case f.Problem != "":
		fmt.Fprintf(&b, "; %s", f.Problem)
	case f.Fixable:
		fmt.Fprintf(&b, "; holds at %s", f.Lowest)
	default:
		fmt.Fprintf(&b, "; needs %s", f.Lowest)
	}
	if len(f.Forces) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(f.Forces, "; "))
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "no spec"
	}
	return s
}

func sortFindings(fs []Finding) {
	slices.SortFunc(fs, func(a, b Finding) int { return strings.Compare(a.Name, b.Name) })
}

// ceilingText is a ceiling as logs say it.
func ceilingText(v convert.Version) string {
	if v.IsZero() {
		return "none"
	}
	return v.String()
}

// summary is what a spec.config is, whatever the ceiling: kept in the
// informer's cache in place of the config (see summarize), so its fields
// are what unstructured objects hold.
type summary struct {
	// Stored is the spec declared; "" for an empty config.
	Stored string `json:"stored,omitempty"`
	// Lowest is the spec the conversion stores it at ("" when it cannot).
	Lowest string `json:"lowest,omitempty"`
	// Needs are the fields needing a spec above 3.0.0.
	Needs []need `json:"needs,omitempty"`
	// Problem says why it was not converted: it does not parse, the
	// cluster's machine-config-operator refuses it at its newer spec, or
	// the conversion cannot prove a lower spec lossless.
	Problem string `json:"problem,omitempty"`
}

type need struct {
	Path    string `json:"path"`
	What    string `json:"what"`
	Version string `json:"version"`
}

func (n need) String() string {
	return convert.Reason{Path: convert.ParsePath(n.Path), What: n.What, Version: mustVersion(n.Version)}.String()
}

func mustVersion(s string) convert.Version {
	v, _ := convert.ParseVersion(s)
	return v
}

// verdict says whether the release that reads up to ceiling (zero: none
// known) fails on a config so summarized, and what to report.
func (s *summary) verdict(ceiling convert.Version) (Finding, bool) {
	f := Finding{Stored: s.Stored, Lowest: s.Lowest, Problem: s.Problem}
	if s.Stored == "" && s.Problem == "" {
		return f, false // an empty config: every release reads it
	}
	stored, err := convert.ParseVersion(s.Stored)
	lowest, lerr := convert.ParseVersion(s.Lowest)
	switch {
	case err != nil:
		// An unknown or missing version: no release parses it.
	case stored.Major == 2:
		return f, false // every release since 4.6 reads spec 2.2
	case ceiling.IsZero():
		// No rollback release known: what the webhook would store lower.
		if lerr != nil || !lowest.Less(stored) {
			return f, false
		}
	case !ceiling.Less(stored):
		return f, false
	}
	if lerr != nil {
		return f, true
	}
	f.Fixable = ceiling.IsZero() || !ceiling.Less(lowest)
	for _, n := range s.Needs {
		if v := mustVersion(n.Version); f.Fixable && v == lowest || !f.Fixable && ceiling.Less(v) {
			f.Forces = append(f.Forces, n.String())
		}
	}
	return f, true
}

// gauge exports the last report's count per pool.
type gauge struct{ w *Watch }

var unreadableDesc = prometheus.NewDesc("mcs_admit_unreadable_machineconfigs",
	"MachineConfigs stored at a spec the release a rollback returns to cannot parse (with no rollback release known: stored above the lowest spec that holds them), per pool; rendered configs count in the pool that owns them.",
	[]string{"pool"}, nil)

func (g gauge) Describe(ch chan<- *prometheus.Desc) { ch <- unreadableDesc }

func (g gauge) Collect(ch chan<- prometheus.Metric) {
	r := g.w.latest()
	if r == nil {
		return // not listed yet: no number rather than a false 0
	}
	for pool, n := range r.Pools {
		ch <- prometheus.MustNewConstMetric(unreadableDesc, prometheus.GaugeValue, float64(n), pool)
	}
}

// Package promrules is the tests' harness for PrometheusRule manifests: their rules, promtool's checks and the metrics each rule reads.
//
// A test of a manifest does (cmd/mcs/alerts_test.go):
//
//	rules := promrules.Load(t, "../../deploy/prometheusrule.yaml") // every rule, in order
//	for _, p := range promrules.Problems(rules) { t.Error(p) }    // severity, summary, description, runbook_url
//	promrules.Check(t, manifest)                                  // promtool check rules
//	promrules.Test(t, manifest, "testdata/x.promtest.yaml")       // promtool test rules: fire and resolve
//	exposed, err := promrules.Exposed(resp.Body)                  // a scrape of the real binary's /metrics
//	for _, m := range promrules.Unexposed(rules, exposed) { t.Error(m) }
//
// RuleFile gives the plain rule file of a manifest. promtool comes from
// Debian's prometheus package (`make promtool`): a test without it is
// skipped, or fails under CI=true.
package promrules

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Rule is one rule of a manifest, alerting (Alert set) or recording
// (Record set), with the group it is in.
type Rule struct {
	Group       string            `json:"-"`
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// name is the rule's alert or record name.
func (r Rule) name() string {
	if r.Alert != "" {
		return r.Alert
	}
	return r.Record
}

// group is a rule group as both the PrometheusRule's spec.groups and a
// Prometheus rule file spell it; raw keeps every field for the rule file.
type group struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

type manifestDoc struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Groups []map[string]any `json:"groups"`
	} `json:"spec"`
}

// ruleGroups returns the groups of every PrometheusRule in manifest (one
// or more YAML documents; documents of other kinds are passed over), as
// generic maps so that the rule file keeps every field, and an error when
// it holds none.
func ruleGroups(manifest []byte) ([]map[string]any, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var groups []map[string]any
	for i := 0; ; i++ {
		var doc manifestDoc
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if doc.Kind != "PrometheusRule" {
			continue
		}
		if len(doc.Spec.Groups) == 0 {
			return nil, fmt.Errorf("PrometheusRule %s: no spec.groups", doc.Metadata.Name)
		}
		groups = append(groups, doc.Spec.Groups...)
	}
	if len(groups) == 0 {
		return nil, errors.New("no PrometheusRule with rule groups")
	}
	return groups, nil
}

// RuleFile is the Prometheus rule file (`groups: [...]`) holding the rule
// groups of every PrometheusRule in manifest, as promtool reads it.
func RuleFile(manifest []byte) ([]byte, error) {
	groups, err := ruleGroups(manifest)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(map[string]any{"groups": groups})
}

// parseRules are the rules of every PrometheusRule in manifest, in order.
func parseRules(manifest []byte) ([]Rule, error) {
	file, err := RuleFile(manifest)
	if err != nil {
		return nil, err
	}
	var f struct {
		Groups []group `json:"groups"`
	}
	if err := yaml.Unmarshal(file, &f); err != nil {
		return nil, fmt.Errorf("reading rule groups: %w", err)
	}
	var rules []Rule
	for _, g := range f.Groups {
		for i, r := range g.Rules {
			if r.name() == "" || r.Expr == "" {
				return nil, fmt.Errorf("group %s rule %d: no alert or record name, or no expr", g.Name, i)
			}
			r.Group = g.Name
			rules = append(rules, r)
		}
	}
	return rules, nil
}

// Problems are what an alert lacks for an admin and for OpenShift's
// update machinery: a severity label (info, warning or critical), and
// summary, description and runbook_url annotations. Recording rules are
// passed over.
func Problems(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		if r.Alert == "" {
			continue
		}
		switch r.Labels["severity"] {
		case "info", "warning", "critical":
		default:
			out = append(out, fmt.Sprintf("alert %s: severity %q, want info, warning or critical", r.Alert, r.Labels["severity"]))
		}
		for _, a := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				out = append(out, fmt.Sprintf("alert %s: no %s annotation", r.Alert, a))
			}
		}
	}
	return out
}

// Unexposed says, for each rule, every metric its expression reads that
// is not in exposed (Exposed's set from a scrape), and each expression it
// cannot read. Empty when every metric each rule reads is exposed. The
// series recording rules among rules write count as exposed.
func Unexposed(rules []Rule, exposed map[string]bool) []string {
	recorded := map[string]bool{}
	for _, r := range rules {
		recorded[r.Record] = r.Record != ""
	}
	var out []string
	for _, r := range rules {
		names, err := metricNames(r.Expr)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", r.name(), err))
			continue
		}
		if len(names) == 0 {
			out = append(out, fmt.Sprintf("%s: reads no metric: %s", r.name(), r.Expr))
		}
		for _, n := range names {
			if !exposed[n] && !recorded[n] {
				out = append(out, fmt.Sprintf("%s reads %s, which the binary does not expose", r.name(), n))
			}
		}
	}
	sort.Strings(out)
	return out
}

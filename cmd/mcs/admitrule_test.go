package main

import (
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/internal/promrules"
)

// The webhook's PrometheusRule (deploy/openshift/admit).
const admitRulesManifest = "../../deploy/openshift/admit/prometheusrule.yaml"

// The webhook's alert is complete (severity, summary, description, a
// runbook_url into its section of docs/alerts.md), is an update precheck,
// reads only the unreadable gauge, and promtool checks it and sees it
// fire and resolve (testdata/admit-rule-tests.yaml).
func TestAdmitRule(t *testing.T) {
	rules := promrules.Load(t, admitRulesManifest)
	for _, p := range promrules.Problems(rules) {
		t.Error(p)
	}
	if len(rules) != 1 {
		t.Fatalf("%d rules", len(rules))
	}
	r := rules[0]
	if want := "https://github.com/ignition-mcs/mcs/blob/main/docs/alerts.md#" + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
		t.Errorf("runbook_url %s, want %s", r.Annotations["runbook_url"], want)
	}
	if !strings.Contains(string(mustRead(t, alertsDoc)), "\n## "+r.Alert+"\n") {
		t.Errorf("no section ## %s in %s", r.Alert, alertsDoc)
	}
	if r.Labels["openShiftUpdatePrecheck"] != "true" || r.For == "" {
		t.Errorf("labels %v, for %q: want an update precheck that waits some minutes", r.Labels, r.For)
	}
	for _, miss := range promrules.Unexposed(rules, map[string]bool{"mcs_admit_unreadable_machineconfigs": true}) {
		t.Errorf("reads more than the gauge: %s", miss)
	}
	promrules.Check(t, admitRulesManifest)
	promrules.Test(t, admitRulesManifest, "testdata/admit-rule-tests.yaml")
}

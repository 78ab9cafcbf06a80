package main

import (
	"bytes"
	"context"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ignition-mcs/mcs/internal/promrules"
)

// The PrometheusRules of deploy/ and deploy/openshift/.
const (
	rulesManifest          = "../../deploy/prometheusrule.yaml"
	openShiftRulesManifest = "../../deploy/openshift/prometheusrule.yaml"
	alertsDoc              = "../../docs/alerts.md"
)

// updatePrechecks are the alerts that make an update or a rollback unsafe:
// OpenShift's cluster-version operator turns them into update risks.
var updatePrechecks = []string{"MCSBootImageSkewRefused", "MCSRenderFailing", "MCSNodeFirstBootFailed", "MCSPointerConfigCAExpiring"}

// Every alert is complete for an admin and for OpenShift (severity,
// summary, description, a runbook_url into its own section of
// docs/alerts.md, the precheck label where an update is unsafe), both
// manifests hold the same groups, and promtool checks them and sees each
// alert fire and resolve.
func TestAlertRules(t *testing.T) {
	rules := promrules.Load(t, rulesManifest)
	for _, p := range promrules.Problems(rules) {
		t.Error(p)
	}
	doc, err := os.ReadFile(alertsDoc)
	if err != nil {
		t.Fatal(err)
	}
	sections := regexp.MustCompile(`(?m)^## (\S+)$`).FindAllStringSubmatch(string(doc), -1)
	var documented, alerts []string
	for _, s := range sections {
		documented = append(documented, s[1])
	}
	for _, r := range rules {
		if r.Alert == "" {
			continue
		}
		alerts = append(alerts, r.Alert)
		want := "https://github.com/ignition-mcs/mcs/blob/main/docs/alerts.md#" + strings.ToLower(r.Alert)
		if got := r.Annotations["runbook_url"]; got != want {
			t.Errorf("%s: runbook_url %s, want %s", r.Alert, got, want)
		}
		if got, want := r.Labels["openShiftUpdatePrecheck"] == "true", slices.Contains(updatePrechecks, r.Alert); got != want {
			t.Errorf("%s: openShiftUpdatePrecheck %q, want it set: %v", r.Alert, r.Labels["openShiftUpdatePrecheck"], want)
		}
	}
	// The webhook's alert has its section too (TestAdmitRule).
	for _, r := range promrules.Load(t, admitRulesManifest) {
		alerts = append(alerts, r.Alert)
	}
	slices.Sort(alerts)
	slices.Sort(documented)
	if !slices.Equal(alerts, documented) {
		t.Errorf("alerts %q, sections of %s %q: one section per alert", alerts, alertsDoc, documented)
	}
	a, _ := promrules.RuleFile(mustRead(t, rulesManifest))
	b, _ := promrules.RuleFile(mustRead(t, openShiftRulesManifest))
	if !bytes.Equal(a, b) {
		t.Errorf("%s and %s hold different rule groups", rulesManifest, openShiftRulesManifest)
	}
	promrules.Check(t, rulesManifest)
	promrules.Test(t, rulesManifest, "testdata/alerts.promtest.yaml")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every metric each rule reads is one the real binary exposes: mcs serving
// a pool that needs spec 3.4, asked once by an Ignition that reads only
// 3.2 (the skew stub), told of a failed first boot, then scraped; and `mcs
// controller --manage-pki` against a real kube-apiserver with a user-data
// Secret, scraped after its first pass.
func TestAlertMetricsExposed(t *testing.T) {
	in := start(t, "--dir", "../../fixtures/features/tang-advertisement-3.4", "--listen-plain", "127.0.0.1:0", "--listen-tls", "")
	waitFor(t, "ready", func() bool { c, _, _ := in.get("/readyz"); return c == 200 })
	if code, body, err := in.get("/config/worker", "User-Agent", "Ignition/v2.9.0", "Accept", "application/vnd.coreos.ignition+json;version=3.2.0"); err != nil || code != 200 || !strings.Contains(string(body), "mcs-cannot-join") {
		t.Fatalf("an Ignition v2.9.0 request: %d %v, want the skew stub:\n%s", code, err, body)
	}
	if code, body := postReport(t, in.base, `{"pool":"worker","nodeID":"n1","stage":"firstboot-update"}`); code != 202 {
		t.Fatalf("a first-boot failure report: %d %s", code, body)
	}
	code, scrape, err := in.get("/metrics")
	if err != nil || code != 200 {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	exposed, err := promrules.Exposed(bytes.NewReader(scrape))
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(exposed, controllerExposed(t))
	for _, miss := range promrules.Unexposed(promrules.Load(t, rulesManifest), exposed) {
		t.Error(miss)
	}
}

// controllerExposed is what `mcs controller --manage-pki` exposes once its
// first PKI pass has seen a user-data Secret.
func controllerExposed(t *testing.T) map[string]bool {
	kubeconfig, kc := pkiCluster(t)
	userData := `{"ignition":{"version":"3.1.0","config":{"merge":[{"source":"https://127.0.0.1:22623/config/worker"}]}}}`
	if _, err := kc.CoreV1().Secrets(mapiNS).Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "worker-user-data"},
		Data: map[string][]byte{"userData": []byte(userData)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	args := []string{"controller", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0", "--manage-pki"}
	c := launch(t, true, func(ctx context.Context, stdout, stderr io.Writer) error {
		return dispatch(ctx, args, nil, stdout, stderr)
	})
	var exposed map[string]bool
	waitFor(t, "the PKI manager's metrics", func() bool {
		_, scrape, err := c.get("/metrics")
		if err != nil {
			return false
		}
		exposed, err = promrules.Exposed(bytes.NewReader(scrape))
		return err == nil && exposed["mcs_pki_pointer_config_works_until_timestamp_seconds"]
	})
	return exposed
}

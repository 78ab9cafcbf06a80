package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/insight"
	"github.com/ignition-mcs/mcs/internal/testkit"
)

var runbookURL = regexp.MustCompile(`(?m)^\s+runbook_url: (\S+)$`)

// Every PrometheusRule's runbook_url is built from one base, the component
// deploy/components/runbook-base (the insights' --runbook-base default):
// a copy of deploy/ with another base there has every alert of every
// kustomization point into it, at the alert's own section.
func TestRunbookBase(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		testkit.Missing(t, "no kubectl: its kustomize builds the manifests (make kubectl)")
	}
	base, err := os.ReadFile(filepath.Join("components", "runbook-base", "base.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(base), "  base: "+insight.DefaultRunbooks+"\n") {
		t.Fatalf("the component's base is not insight.DefaultRunbooks (%s):\n%s", insight.DefaultRunbooks, base)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(".")); err != nil {
		t.Fatal(err)
	}
	const mine = "https://git.example.com/ops/mcs/-/blob/main/docs/alerts.md"
	if err := os.WriteFile(filepath.Join(dir, "components", "runbook-base", "base.yaml"), []byte(strings.Replace(string(base), insight.DefaultRunbooks, mine, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	alert := regexp.MustCompile(`(?m)^\s+- alert: (\S+)$`)
	for _, k := range []string{".", "openshift", filepath.Join("openshift", "admit")} {
		out, err := exec.Command("kubectl", "kustomize", filepath.Join(dir, k)).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl kustomize deploy/%s: %v\n%s", k, err, out)
		}
		urls, alerts := runbookURL.FindAllStringSubmatch(string(out), -1), alert.FindAllStringSubmatch(string(out), -1)
		if len(urls) == 0 || len(urls) != len(alerts) {
			t.Fatalf("deploy/%s: %d alerts, %d runbook_urls", k, len(alerts), len(urls))
		}
		for i, u := range urls {
			if want := mine + "#" + strings.ToLower(alerts[i][1]); u[1] != want {
				t.Errorf("deploy/%s: runbook_url %s, want %s", k, u[1], want)
			}
		}
		if strings.Contains(string(out), "mcs-runbook-base") {
			t.Errorf("deploy/%s: the component's ConfigMap is in the output", k)
		}
	}
}

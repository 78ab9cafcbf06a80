package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/cutover"
)

// verifyStep is docs/cutover.md step 4's /status block as written: the
// namespace and label it finds a pod by, the port-forward's local and pod
// ports, and the path it fetches.
type verifyStep struct {
	namespace, selector string
	local, pod          string
	path                string
}

var (
	stepFourSection = regexp.MustCompile("(?s)\n## 4\\. Verify\n(.*?)\n## ")
	stepShellBlock  = regexp.MustCompile("(?s)```sh\n(.*?)```")
	stepGetPods     = regexp.MustCompile(`oc -n (\S+) get pods -l (\S+) -o jsonpath='\{\.items\[0\]\.metadata\.name\}'`)
	stepForward     = regexp.MustCompile(`oc -n (\S+) port-forward pod/\$POD (\d+):(\d+) & PF=\$!`)
	stepCurl        = regexp.MustCompile(`curl -s http://127\.0\.0\.1:(\d+)(/\S*)`)
)

// readVerifyStep finds step 4's block that port-forwards and fetches
// /status, and reads it, failing t on anything it lacks: a pod found, a
// port-forward started before the curl and ended after it, the curl on
// the forwarded port.
func readVerifyStep(t *testing.T) verifyStep {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cutover.md"))
	if err != nil {
		t.Fatal(err)
	}
	sec := stepFourSection.FindSubmatch(doc)
	if sec == nil {
		t.Fatal("docs/cutover.md has no section \"## 4. Verify\"")
	}
	for _, b := range stepShellBlock.FindAllSubmatch(sec[1], -1) {
		var lines []string
		for _, l := range strings.Split(string(b[1]), "\n") {
			lines = append(lines, strings.TrimSpace(l))
		}
		block := strings.Join(lines, "\n")
		if !strings.Contains(block, "port-forward") {
			continue
		}
		get, fwd, curl := stepGetPods.FindStringSubmatchIndex(block), stepForward.FindStringSubmatchIndex(block), stepCurl.FindStringSubmatchIndex(block)
		kill := strings.Index(block, "kill $PF")
		if get == nil || fwd == nil || curl == nil || kill < 0 || !(get[0] < fwd[0] && fwd[0] < curl[0] && curl[0] < kill) {
			t.Fatalf("step 4's block does not find a pod, port-forward to it, curl, then kill the forward, in that order:\n%s", block)
		}
		s := verifyStep{namespace: block[get[2]:get[3]], selector: block[get[4]:get[5]],
			local: block[fwd[4]:fwd[5]], pod: block[fwd[6]:fwd[7]], path: block[curl[4]:curl[5]]}
		if ns := block[fwd[2]:fwd[3]]; ns != s.namespace {
			t.Errorf("step 4 finds the pod in %s and forwards to it in %s", s.namespace, ns)
		}
		if port := block[curl[2]:curl[3]]; port != s.local {
			t.Errorf("step 4 curls port %s; the port-forward listens on %s", port, s.local)
		}
		return s
	}
	t.Fatal("docs/cutover.md step 4 has no block that port-forwards to a pod")
	return verifyStep{}
}

// Step 4 of docs/cutover.md as written reaches mcs's /status: it finds a
// pod of deploy/openshift's DaemonSet (its namespace, its label), and
// forwards to the port where mcs start, with the DaemonSet's arguments,
// serves /status (its admin listener's default: the DaemonSet sets
// none). TestCutoverRehearsal fetches the block's path from mcs start.
func TestCutoverDocVerifyStep(t *testing.T) {
	s := readVerifyStep(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "openshift", "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.Unmarshal(b, &ds); err != nil {
		t.Fatal(err)
	}
	if s.namespace != cutover.Namespace || s.namespace != ds.Namespace {
		t.Errorf("step 4 looks in %s; the DaemonSet is in %s", s.namespace, ds.Namespace)
	}
	k, v, _ := strings.Cut(s.selector, "=")
	if ds.Spec.Template.Labels[k] != v || ds.Spec.Selector.MatchLabels[k] != v {
		t.Errorf("step 4 selects pods by %s; the DaemonSet's pods are labelled %v", s.selector, ds.Spec.Template.Labels)
	}
	if slices.ContainsFunc(daemonSetArgs(t), func(a string) bool { return strings.HasPrefix(a, "--listen-admin") }) {
		t.Fatal("the DaemonSet sets --listen-admin: step 4's port is its, not mcs start's default")
	}
	host, port, err := net.SplitHostPort(defaultAdmin)
	if err != nil || port != s.pod || !net.ParseIP(host).IsLoopback() {
		t.Errorf("step 4 forwards to the pod's port %s; mcs start serves /status on %s (loopback, reached through the host network)", s.pod, defaultAdmin)
	}
	if s.path != "/status" {
		t.Errorf("step 4 fetches %s, not /status", s.path)
	}
}

// adminListening and plainListening are mcs start's lines for its admin
// and plain listeners.
var (
	adminListening = regexp.MustCompile(`listening on (http://\S+) \(admin`)
	plainListening = regexp.MustCompile(`(?m)listening on (http://\S+)$`)
)

// checkVerifyStep fetches step 4's path from in's admin listener (the
// rehearsal binds it on port 0 in place of the pod's port the block
// forwards to): /status naming every pool; and from the plain listener
// (22624's stand-in), where it is not.
func (c *cluster) checkVerifyStep(t *testing.T, in *instance) {
	t.Helper()
	s := readVerifyStep(t)
	m := adminListening.FindStringSubmatch(in.stdout.String())
	if m == nil {
		t.Fatalf("mcs start named no admin listener:\n%s", in.stdout.String())
	}
	code, body, err := getWith(http.DefaultClient, m[1]+s.path)
	var doc struct {
		Pools []struct{ Name, Rendered string } `json:"pools"`
	}
	if err != nil || code != 200 || json.Unmarshal(body, &doc) != nil {
		t.Fatalf("step 4's %s on the admin listener: %d %v\n%s", s.path, code, err, body)
	}
	served := map[string]string{}
	for _, p := range doc.Pools {
		served[p.Name] = p.Rendered
	}
	for pool, r := range c.rendered {
		if served[pool] != r.Name {
			t.Errorf("step 4's %s: pool %s serves %q, want %s", s.path, pool, served[pool], r.Name)
		}
	}
	plain := plainListening.FindStringSubmatch(in.stdout.String())
	if plain == nil {
		t.Fatalf("mcs start named no plain listener:\n%s", in.stdout.String())
	}
	if code, _, err := getWith(http.DefaultClient, plain[1]+s.path); code != 404 {
		t.Errorf("%s on the plain listener (22624): %d %v, want 404 (it names pools and nodes)", s.path, code, err)
	}
}

package codecheck

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Data flows one way: sources → render → snapshot → bytes. Each rule is a
// package and what it must not depend on, directly or not.
var layering = []struct{ pkg, notOn, why string }{
	{"render", "serve", "a render knows nothing of how it is served"},
	{"render", "source", "sources feed renders, not the other way"},
	{"render", "source/tree", "sources read files and feed renders, not the other way"},
	{"convert", "render", "Ignition conversion knows no MachineConfigs"},
	{"serve", "source/kube", "the server serves any source"},
	{"serve", "controller", "the server and the controller are apart"},
	{"controller", "serve", "the controller writes configs, it does not serve them"},
	{"cutover", "render", "the cutover moves a DaemonSet; it renders nothing"},
	{"cutover", "serve", "the cutover moves a DaemonSet; it serves nothing"},
	{"deploy", "render", "the manifests are data"},
	{"releases", "render", "the table of releases knows no MachineConfigs"},
	{"admit", "serve", "admission rewrites what is stored, it serves nothing"},
	{"admit", "source", "admission sees each write as the API server sends it"},
	{"admit", "controller", "admission and the controller are apart"},
	{"admit/stored", "source/kube", "the watch of stored MachineConfigs reads them itself, apart from the sources"},
	{"admit", "admit/stored", "the review knows nothing of the watch: cmd/mcs wires them"},
	{"nodefail", "serve", "node reports are taken by the server, not the other way"},
	{"serve", "insight", "the server knows nothing of who reads its status"},
	{"serve/pipeline", "serve", "the render pipeline makes snapshots; it knows nothing of HTTP"},
	{"serve/fetchlog", "serve", "the fetch records know nothing of HTTP"},
	{"serve/fetchlog", "serve/pipeline", "the fetch records know nothing of how snapshots are made"},
	{"serve/status", "serve", "the status for people reads snapshots and records; it knows nothing of HTTP's routes"},
	{"serve/pipeline", "serve/status", "the render pipeline reports through pipeline.Health; it knows nothing of who shows it"},
	{"insight", "serve", "insights read the status document, not the server"},
	{"netlimit", "serve", "connection limits know nothing of what is served"},
	{"netlimit", "render", "connection limits know nothing of what is served"},
	{"preflight", "serve", "preflight reads a cluster as mcs start would, serving nothing"},
	{"preflight", "controller", "preflight changes nothing"},
	{"internal/reload", "render", "reloading files knows nothing of what they hold"},
	{"internal/reload", "serve", "reloading files knows nothing of the server"},
	{"internal/logthrottle", "serve", "the throttle knows only log records"},
	{"internal/klogbridge", "serve", "the bridge knows only log records"},
	{"internal/gctune", "render", "GC tuning knows only the runtime"},
	{"internal/lifecycle", "serve", "the lifecycle runs any HTTP server"},
	{"internal/tlsnames", "serve", "TLS names know nothing of what is served"},
	{"internal/authtokens", "controller", "tokens are the server's, not the controller's"},
	{"internal/daemon", "serve", "starting a command knows nothing of what it runs"},
	{"internal/daemon", "controller", "starting a command knows nothing of what it runs"},
	{"internal/httpserve", "serve", "listeners and HTTP servers serve any handler"},
	{"internal/httpserve", "render", "listeners and HTTP servers serve any handler"},
	{"internal/serving", "controller", "the server and the controller are apart"},
	{"internal/admitd", "serve", "admission rewrites what is stored, it serves nothing"},
	{"internal/admitd", "source", "admission sees each write as the API server sends it"},
	{"internal/procstat", "serve", "reading /proc knows nothing of what it measures"},
}

func TestLayering(t *testing.T) {
	const module = "github.com/ignition-mcs/mcs/"
	cmd := exec.Command("go", "list", "-e", "-deps=false", "-f", `{{.ImportPath}}|{{join .Imports ","}}|{{join .Deps ","}}`, "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.Bytes())
	}
	imports, deps := map[string][]string{}, map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		pkg := strings.TrimPrefix(f[0], module)
		imports[pkg], deps[pkg] = strings.Split(f[1], ","), strings.Split(f[2], ",")
	}
	if len(imports) < 20 {
		t.Fatalf("only %d packages listed", len(imports))
	}
	for _, r := range layering {
		if _, ok := deps[r.pkg]; !ok {
			t.Errorf("no package %s", r.pkg)
		}
		for pkg, ds := range deps {
			if (pkg == r.pkg || strings.HasPrefix(pkg, r.pkg+"/")) && slices.Contains(ds, module+r.notOn) {
				t.Errorf("%s depends on %s: %s", pkg, r.notOn, r.why)
			}
		}
	}
	for pkg, is := range imports {
		if slices.Contains(is, "flag") && !strings.HasPrefix(pkg, "cmd/") {
			t.Errorf("%s imports flag: flags live in cmd/", pkg)
		}
		if slices.Contains(is, module+"internal/promrules") {
			t.Errorf("%s imports internal/promrules: a test harness, for tests only", pkg)
		}
	}
}

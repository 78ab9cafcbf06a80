package main

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/impact"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// serveTestHeaders reads, from the serve package's tests themselves, every
// Accept header and Ignition User-Agent they send, so this test follows
// them as they change.
func serveTestHeaders(t *testing.T) (accepts, agents []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("serve", "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no serve tests found: %v", err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			switch {
			case err != nil:
			case strings.HasPrefix(s, "Ignition/") && !slices.Contains(agents, s):
				agents = append(agents, s)
			case isAccept(s) && !slices.Contains(accepts, s):
				accepts = append(accepts, s)
			}
			return true
		})
	}
	if len(accepts) < 10 || len(agents) < 3 {
		t.Fatalf("found only %d Accept headers and %d User-Agents in the serve tests", len(accepts), len(agents))
	}
	return accepts, agents
}

func isAccept(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "ignition+json") || strings.Contains(l, "*/*") || strings.HasPrefix(l, "text/")
}

// mcsServer serves a tree as mcs does: the directory source, the reloader,
// the node files and the skew gate, behind a real HTTP listener.
func mcsServer(t *testing.T, tree string, cfg serve.Config, nf render.NodeFiles, policy *skewgate.Policy) *httptest.Server {
	t.Helper()
	cfg.Gate = skewgate.New(policy, nil)
	srv, err := serve.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rl := &pipeline.Reloader{Source: &source.Dir{Path: tree}, Server: srv, Gate: cfg.Gate, NodeFiles: func() (render.NodeFiles, error) { return nf, nil }}
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

func fetch(t *testing.T, ts *httptest.Server, pool string, h http.Header) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/config/"+pool, nil)
	req.Header = h
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

var refID = regexp.MustCompile(`mcs-skew-[0-9a-f]+`)

// TestClientMatchesServer: render --client prints, for every client header
// the serve tests use, the body mcs serves for the same headers, tree and
// policy (a stub's reference id aside).
func TestClientMatchesServer(t *testing.T) {
	toRoot(t)
	accepts, agents := serveTestHeaders(t)
	dir := t.TempDir()
	kubeconfig, ca, policy := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "ca.crt"), filepath.Join(dir, "policy.yaml")
	os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o644)
	os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nkubelet\n-----END CERTIFICATE-----\n"), 0o644)
	os.WriteFile(policy, []byte("minIgnitionVersion: {worker: 2.11.0}\n"), 0o644)
	pol, err := skewgate.LoadPolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	trees := []struct {
		name, tree, pool string
		flags            []string
		cfg              serve.Config
		nf               render.NodeFiles
		policy           *skewgate.Policy
	}{
		{"luks discard 3.4", filepath.Join(diffDir, "luks-discard"), "worker", nil, serve.Config{}, render.NodeFiles{}, nil},
		{"kargs 3.3, node files", filepath.Join("fixtures", "features", "kargs-3.3"), "worker",
			[]string{"--bootstrap-kubeconfig", kubeconfig, "--kubelet-ca", ca}, serve.Config{}, render.NodeFiles{Kubeconfig: []byte("apiVersion: v1\nkind: Config\n"), KubeletCA: []byte("-----BEGIN CERTIFICATE-----\nkubelet\n-----END CERTIFICATE-----\n")}, nil},
		{"cluster, policy, default 2.2", filepath.Join("fixtures", "cluster"), "master",
			[]string{"--skew-policy", policy, "--default-spec", "2.2.0"}, serve.Config{DefaultSpec: convert.V2_2}, render.NodeFiles{}, pol},
		{"tang 3.4, policy", filepath.Join("fixtures", "features", "tang-advertisement-3.4"), "worker",
			[]string{"--skew-policy", policy}, serve.Config{}, render.NodeFiles{}, pol},
	}
	seen := map[string]int{}
	for _, tr := range trees {
		t.Run(tr.name, func(t *testing.T) {
			ts := mcsServer(t, tr.tree, tr.cfg, tr.nf, tr.policy)
			var clients [][2]string
			for _, a := range accepts {
				clients = append(clients, [2]string{"Ignition/v2.9.0", a})
			}
			for _, ua := range agents {
				clients = append(clients, [2]string{ua, ""})
			}
			for _, c := range clients {
				args := append([]string{"--client", c[0], "--accept", c[1], "--pool", tr.pool, tr.tree}, tr.flags...)
				out, errs, code := cli(t, "", args...)
				status, body := fetch(t, ts, tr.pool, impact.ClientHeader(c[0], c[1]))
				seen[outcome(status, body)]++
				switch {
				case status == http.StatusOK && code != exitOK:
					t.Errorf("%s %q: exit %d, mcs answers 200: %s", c[0], c[1], code, errs)
				case status != http.StatusOK && code == exitOK:
					t.Errorf("%s %q: exit 0, mcs answers %d", c[0], c[1], status)
				case status == http.StatusOK && refID.ReplaceAllString(out, "ID") != refID.ReplaceAllString(string(body), "ID"):
					t.Errorf("%s %q: render --client differs from mcs's body\n--- render\n%s\n--- mcs\n%s", c[0], c[1], out, body)
				}
			}
		})
	}
	t.Logf("%d Accept headers, %d User-Agents from the serve tests; answers compared: %v", len(accepts), len(agents), seen)
	// Every kind of answer was compared: configs, stubs, refusals.
	if seen["config"] == 0 || seen["stub"] == 0 || seen["406"] == 0 {
		t.Errorf("answers compared: %v", seen)
	}
}

func outcome(status int, body []byte) string {
	switch {
	case status != http.StatusOK:
		return strconv.Itoa(status)
	case refID.Match(body):
		return "stub"
	}
	return "config"
}

func TestClientExitCodes(t *testing.T) {
	toRoot(t)
	tang := filepath.Join("fixtures", "features", "tang-advertisement-3.4")
	custom := filepath.Join("fixtures", "features", "custom-pool")
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"config", []string{"--client", "Ignition/v2.15.0", tang}, exitOK, "gets pool worker's config"},
		{"stub", []string{"--client", "Ignition/v2.9.0", tang}, exitOK, "gets the skew stub at spec 3.2.0 (spec-unreadable)"},
		{"stub fails on era-loss", []string{"--client", "Ignition/v2.9.0", "--fail-on", "era-loss", tang}, exitFailOn, "skew stub"},
		{"406", []string{"--client", "Ignition/v2.9.0", "--accept", "application/vnd.coreos.ignition+json;version=4.0.0", tang}, exitCeiling, "HTTP 406"},
		{"two pools", []string{"--client", "Ignition/v2.15.0", custom}, exitUsage, "choose it with --pool"},
		{"fail-on other", []string{"--client", "Ignition/v2.15.0", "--fail-on", "spec-raise", tang}, exitUsage, "only era-loss"},
		{"accept alone", []string{"--accept", "*/*", tang}, exitUsage, "go with --client"},
		{"pretty", []string{"--client", "Ignition/v2.15.0", "--pretty", tang}, exitUsage, "as it is"},
		{"bad policy", []string{"--client", "Ignition/v2.15.0", "--skew-policy", "nonexistent.yaml", tang}, exitUsage, "--skew-policy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs, code := cli(t, "", c.args...)
			if code != c.code || !strings.Contains(errs, c.stderr) {
				t.Fatalf("exit %d (want %d): %s", code, c.code, errs)
			}
		})
	}
}

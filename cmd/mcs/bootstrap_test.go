package main

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/internal/shareddata"
	"github.com/ignition-mcs/mcs/internal/tlsnames"
	"github.com/ignition-mcs/mcs/render"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

// mcs bootstrap over the installer's layout, as OpenShift's bootstrap
// server reads it: the control plane's pools served from their rendered
// configs with the kubeconfig file and the registry CAs; other pools not.
func TestBootstrap(t *testing.T) {
	dir := t.TempDir()
	_, results := servetest.Render(t, shareddata.Path(t, "realdata", "aws"), render.Options{})
	mkdir := func(p string) string {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	put := func(p string, v any) {
		b, err := json.Marshal(v)
		if err == nil {
			b, err = yaml.JSONToYAML(b)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(mkdir(p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names := map[string]string{}
	for _, r := range results {
		put("machine-configs/"+r.Name+".yaml", asRendered(t, r))
		put("machine-pools/"+r.Pool+".yaml", map[string]any{"apiVersion": render.APIVersion, "kind": "MachineConfigPool",
			"metadata": map[string]any{"name": r.Pool}, "status": map[string]any{"configuration": map[string]any{"name": r.Name}}})
		names[r.Pool] = r.Name
	}
	cc, err := os.ReadFile(shareddata.Path(t, "realdata", "aws", "controllerconfig.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(mkdir("controller-config/machine-config-controller.yaml"), cc, 0o644)
	os.WriteFile(mkdir("registry-ca.crt"), []byte("REGISTRY CA"), 0o644)
	kubeconfig := mkdir("kubeconfig")
	os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600)

	in := startSubcommand(t, true, "bootstrap", "--server-basedir", dir, "--bootstrap-kubeconfig", kubeconfig,
		"--bootstrap-certs", "registry.example.com:5000=registry-ca.crt", "--cert", "", "--key", "", "--listen-tls", "", "--listen-plain", "127.0.0.1:0")
	waitFor(t, "master served", func() bool { return strings.Contains(in.servedFile(t, "master", pathAnnotations), names["master"]) })
	for path, want := range map[string]string{
		pathKubeconfig: "apiVersion: v1\nkind: Config\n",
		"/etc/docker/certs.d/registry.example.com:5000/ca.crt": "REGISTRY CA",
	} {
		if got := in.servedFile(t, "master", path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	if code, _, _ := in.get("/config/worker"); code != 500 {
		t.Errorf("worker from the bootstrap server: %d, want 500 as upstream's", code)
	}
	if _, err := parseBootstrapFlags([]string{"--bootstrap-kubeconfig", filepath.Join(dir, "none")}, io.Discard); err != cmdline.ErrUsage {
		t.Errorf("a missing kubeconfig: %v", err)
	}

}

// The bootstrap server's TLS profile is the installer's APIServer's,
// unless a flag says.
func TestBootstrapTLSProfile(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600)
	base := []string{"--server-basedir", dir, "--bootstrap-kubeconfig", kubeconfig}
	for name, tc := range map[string]struct {
		profile string
		args    []string
		min     uint16
		suites  int
	}{
		"no manifest":        {"", nil, tls.VersionTLS12, len(tlsnames.Intermediate())},
		"Modern":             {"{type: Modern, modern: {}}", nil, tls.VersionTLS13, 3},
		"Old, DHE left out":  {"{type: Old, old: {}}", nil, tls.VersionTLS10, 21}, // of 29 names, Go lacks the 5 DHE and 3 CBC-SHA256/384 suites
		"Custom":             {"{type: Custom, custom: {ciphers: [ECDHE-RSA-AES128-GCM-SHA256], minTLSVersion: VersionTLS11}}", nil, tls.VersionTLS11, 1},
		"a flag over Modern": {"{type: Modern, modern: {}}", []string{"--tls-min-version=VersionTLS12"}, tls.VersionTLS12, len(tlsnames.Intermediate())},
	} {
		manifest := filepath.Join(dir, "api-server", "api-server.yaml")
		os.RemoveAll(filepath.Dir(manifest))
		if tc.profile != "" {
			os.MkdirAll(filepath.Dir(manifest), 0o755)
			os.WriteFile(manifest, []byte("apiVersion: config.openshift.io/v1\nkind: APIServer\nmetadata: {name: cluster}\nspec:\n  tlsSecurityProfile: "+tc.profile+"\n"), 0o644)
		}
		o, err := parseBootstrapFlags(append(base, tc.args...), io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cfg := o.tls.config(); cfg.MinVersion != tc.min || len(cfg.CipherSuites) != tc.suites {
			t.Errorf("%s: min %x, %d suites; want %x, %d", name, cfg.MinVersion, len(cfg.CipherSuites), tc.min, tc.suites)
		}
	}
}

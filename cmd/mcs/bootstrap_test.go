package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/internal/shareddata"
	"github.com/ignition-mcs/mcs/render"
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
		mc := *r.MachineConfig
		js, err := convert.Encode(&r.Config, convert.V3_5, false)
		if err != nil {
			t.Fatal(err)
		}
		mc.Spec.Config = js
		put("machine-configs/"+r.Name+".yaml", &mc)
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
	if _, err := parseBootstrapFlags([]string{"--bootstrap-kubeconfig", filepath.Join(dir, "none")}, io.Discard); err != errUsage {
		t.Errorf("a missing kubeconfig: %v", err)
	}
}

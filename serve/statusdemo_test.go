package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// demoSource renders a directory pool by pool, as the directory source
// does (which serve cannot import), so a broken MachineConfig fails its
// pool alone. Its files are named as if the directory were shown, so the
// page's header and its errors name one tree.
type demoSource struct{ dir, shown string }

func (d *demoSource) Load(context.Context) (*source.Input, error) {
	files, err := filepath.Glob(filepath.Join(d.dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var l render.Loader
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		l.Data(filepath.Join(d.shown, filepath.Base(f)), b)
	}
	set, err := l.Set()
	if err != nil {
		return nil, err
	}
	in := &source.Input{ControllerConfig: set.ControllerConfig()}
	for _, name := range set.PoolNames() {
		res, err := set.RenderPool(name, render.Options{})
		if err != nil {
			if in.Failed == nil {
				in.Failed = map[string]error{}
			}
			in.Failed[name] = err
			continue
		}
		in.Results = append(in.Results, res)
	}
	return in, nil
}

func (d *demoSource) Watch(context.Context, chan<- struct{}) {}
func (d *demoSource) String() string                         { return "directory " + d.shown }

const (
	demoPolicy = `mode: Manual
manual: {mode: OCPVersion, ocpVersion: 4.16.0}
minIgnitionVersion: {infra: 2.14.0}
`
	demoBadMC = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 60-infra-realtime
  labels: {machineconfiguration.openshift.io/role: infra}
spec:
  config: {ignition: {version: 3.2.0}}
  kernelType: realtime-turbo
`
	ign = "application/vnd.coreos.ignition+json;version="
)

// demoServer is a server as an operator finds it at 2 a.m.: worker
// rendered at 3.2.0 for its LUKS volume and fetched by nodes, infra whose
// newest MachineConfig broke its render, and an old node refused.
func demoServer(t testing.TB, notify func(source.Notice)) *Server {
	t.Helper()
	dir := t.TempDir()
	copyFiles(t, dir, "../fixtures/cluster/*.yaml", "../fixtures/features/luks-3.2/50-worker-luks.yaml",
		"../fixtures/features/custom-pool/infra.machineconfigpool.yaml", "../fixtures/features/custom-pool/10-infra-chrony.yaml")
	policy, err := skewgate.ParsePolicy([]byte(demoPolicy))
	if err != nil {
		t.Fatal(err)
	}
	src := &demoSource{dir: dir, shown: "/etc/mcs/cluster"}
	s := mustNew(t, Config{Gate: skewgate.New(policy, nil), Source: src.String(), Notify: notify})
	rl := &pipeline.Reloader{Source: src, Server: s}
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ pool, ua, accept, addr string }{
		{"worker", "Ignition/v2.27.0", ign + "3.5.0", "10.0.32.21:40122"},
		{"worker", "Ignition/v2.27.0", ign + "3.5.0", "10.0.32.22:51833"},
		{"worker", "Ignition/v2.20.0", ign + "3.4.0", "10.0.32.23:39001"},
		{"master", "Ignition/v2.27.0", ign + "3.5.0", "10.0.16.5:44010"},
		{"infra", "curl/8.5.0", "*/*", "10.0.0.9:50500"},
		{"worker", "Ignition/v2.6.0", ign + "3.1.0", "10.0.32.17:40112"},
		{"infra", "Ignition/v2.11.0", ign + "3.3.0", "10.0.48.30:38211"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/config/"+f.pool, nil)
		req.Header.Set("User-Agent", f.ua)
		req.Header.Set("Accept", f.accept)
		req.RemoteAddr = f.addr
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("%s from %s: %d %s", f.pool, f.ua, w.Code, w.Body)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "60-infra-realtime.yaml"), []byte(demoBadMC), 0o644); err != nil {
		t.Fatal(err)
	}
	err = rl.Reload(context.Background())
	if err == nil {
		t.Fatal("the broken MachineConfig rendered")
	}
	// The page's header names the source; its errors must name files in it.
	if want := src.shown + "/60-infra-realtime.yaml:8:3: "; !strings.Contains(err.Error(), want) {
		t.Fatalf("the render error %q does not name %s, the tree the page's header shows", err, want)
	}
	return s
}

func copyFiles(t testing.TB, dst string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		files, err := filepath.Glob(p)
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s: %v", p, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

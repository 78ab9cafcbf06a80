// Package e2e runs the real Ignition clients, one per boot-image era, against mcs's handler on loopback.
package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/ignclient"
	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/skewgate"
)

// handler renders a fixture tree and serves it with the skew gate on;
// tokens, when given, are required.
func handler(t *testing.T, dir, policy string, tokens ...string) (http.Handler, map[string]*render.Result) {
	t.Helper()
	var p *skewgate.Policy
	if policy != "" {
		var err error
		if p, err = skewgate.ParsePolicy([]byte(policy)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := serve.Config{Gate: skewgate.New(p, nil)}
	if len(tokens) > 0 {
		accepted := make([]serve.Token, len(tokens))
		for i, tok := range tokens {
			accepted[i] = serve.Token{Secret: []byte(tok)}
		}
		cfg.Tokens = func() []serve.Token { return accepted }
	}
	return servetest.Handler(t, dir, cfg)
}

// server is handler on plain HTTP.
func server(t *testing.T, dir, policy string) (*httptest.Server, map[string]*render.Result) {
	t.Helper()
	h, pools := handler(t, dir, policy)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts, pools
}

func clients(t *testing.T) map[string]ignclient.Client {
	out := map[string]ignclient.Client{}
	for _, c := range ignclient.Find(t) {
		out[c.Version] = c
	}
	return out
}

func fetch(t *testing.T, c ignclient.Client, url string) *ignclient.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return ignclient.Boot(ctx, t, c, url, ignclient.Options{FetchTimeout: 10 * time.Second, HTTPTotal: 20 * time.Second})
}

// An admitted client gets the pool: its files, the node files, no issue.
// The spec-2 client gets a pool without users (it creates them by running
// the host's /usr/bin/chroot, which a scratch root cannot serve) and with
// kernel arguments, which reach it through the encapsulated MachineConfig
// (clients reading 3.3 and newer get them in the Ignition config).
func TestAdmitted(t *testing.T) {
	cs := clients(t)
	cases := []struct{ client, dir string }{
		{"v2.27.0", "../fixtures/cluster"},
		{"v2.24.0", "../fixtures/cluster"},
		{"v2.27.0", "kargs"},
		{"v0.35.0", "kargs"},
		{"v2.24.0", "kargs"},
	}
	kargs := kargsPool(t)
	for _, c := range cases {
		t.Run(c.client+" "+c.dir, func(t *testing.T) {
			dir := c.dir
			if dir == "kargs" {
				dir = kargs
			}
			ts, pools := server(t, dir, "")
			worker := pools["worker"]
			res := fetch(t, cs[c.client], ts.URL+"/config/worker")
			want := []string{"/etc/machine-config-daemon/node-annotations.json", "/etc/kubernetes/kubeconfig",
				"/etc/ignition-machine-config-encapsulated.json", "/etc/mcs-machine-config-content.json"}
			for _, f := range worker.Config.Storage.Files {
				want = append(want, f.Path)
			}
			for _, p := range want {
				if _, err := res.ReadFile(p); err != nil {
					t.Errorf("%s missing: %v", p, err)
				}
			}
			ann, _ := res.ReadFile("/etc/machine-config-daemon/node-annotations.json")
			if !strings.Contains(string(ann), worker.Name) {
				t.Errorf("annotations name %q, not %s", ann, worker.Name)
			}
			if _, err := res.ReadFile(skewgate.IssuePath("worker")); err == nil {
				t.Error("an admitted node got the skew issue file")
			}
			enc, _ := res.ReadFile("/etc/ignition-machine-config-encapsulated.json")
			for _, k := range worker.Config.KernelArguments.ShouldExist {
				if !strings.Contains(string(enc), `"`+string(k)+`"`) && cs[c.client].Spec2 {
					t.Errorf("kernel argument %q is not in the encapsulated MachineConfig", k)
				}
			}
		})
	}
}

// kargsPool is the kargs-3.3 fixture without its shouldNotExist (which no
// spec below 3.3 can carry): Ignition kernel arguments to add only.
func kargsPool(t *testing.T) string {
	dir := t.TempDir()
	base, err := os.ReadFile("../fixtures/features/kargs-3.3/00-worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(dir+"/00-worker.yaml", base, 0o644)
	os.WriteFile(dir+"/50-worker-kargs.yaml", []byte(`apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-worker-kargs
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  kernelArguments: [audit=1]
  config:
    ignition: {version: 3.3.0}
    kernelArguments:
      shouldExist: [systemd.unified_cgroup_hierarchy=1]
`), 0o644)
	return dir
}

// A skewed client gets a config it parses whose only content is the issue
// file saying why; it boots (both stages succeed) and cannot join.
func TestSkewed(t *testing.T) {
	cs := clients(t)
	oldBootImage := "mode: Manual\nmanual: {mode: RHCOSVersion, rhcosVersion: 48.84.202208021106-0}\n"
	cases := []struct {
		name, dir, policy, client string
		want                      []string
	}{
		{"v2.24 cannot read setuid bits (3.6)", "../fixtures/features/setuid-3.6", "", "v2.24.0",
			[]string{"Ignition (v2.24.0) reads config spec 3.5.0 at most", "needs spec 3.6.0", "mode", "v2.26.0 or newer"}},
		{"spec-2 client and a LUKS pool", "../fixtures/features/luks-3.2", "", "v0.35.0",
			[]string{"v0.35.0", "reads config spec 2.2.0 at most", "$.storage.luks.0"}},
		{"boot image older than the release", "../fixtures/cluster", oldBootImage, "v2.27.0",
			[]string{"RHCOS 48.84.202208021106-0 (RHEL 8.4)", "older than RHCOS 9.2"}},
		{"spec-2 client, boot image policy", "../fixtures/cluster", oldBootImage, "v0.35.0",
			[]string{"RHCOS 48.84.202208021106-0"}},
		{"kernel arguments to remove need 3.3", "../fixtures/features/kargs-3.3", "", "v0.35.0",
			[]string{"$.kernelArguments.shouldNotExist", "needs spec 3.3.0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts, _ := server(t, c.dir, c.policy)
			res := fetch(t, cs[c.client], ts.URL+"/config/worker")
			msg, err := res.ReadFile(skewgate.IssuePath("worker"))
			if err != nil {
				t.Fatalf("no issue file: %v\n%s", err, res.Tail())
			}
			for _, w := range append(c.want, `pool "worker"`, "Reference: mcs-skew-") {
				if !strings.Contains(string(msg), w) {
					t.Errorf("issue message lacks %q:\n%s", w, msg)
				}
			}
			for _, p := range []string{"/etc/kubernetes/kubeconfig", "/etc/machine-config-daemon/node-annotations.json", "/etc/ignition-machine-config-encapsulated.json"} {
				if _, err := res.ReadFile(p); err == nil {
					t.Errorf("a refused node got %s", p)
				}
			}
		})
	}
}

// The setuid pool is admitted for the client that reads 3.6, bits intact.
func TestSetuidAdmittedForNewClient(t *testing.T) {
	cs := clients(t)
	ts, pools := server(t, "../fixtures/features/setuid-3.6", "")
	res := fetch(t, cs["v2.27.0"], ts.URL+"/config/worker")
	checked := 0
	for _, d := range pools["worker"].Config.Storage.Directories {
		if d.Mode == nil || *d.Mode&0o7000 == 0 {
			continue
		}
		fi, err := res.Lstat(d.Path)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(*d.Mode & 0o777)
		if fi.Mode().Perm() != want || (*d.Mode&0o1000 != 0) != (fi.Mode()&os.ModeSticky != 0) || (*d.Mode&0o2000 != 0) != (fi.Mode()&os.ModeSetgid != 0) {
			t.Errorf("%s: mode %v, config says %o", d.Path, fi.Mode(), *d.Mode)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("the fixture has no directory with special bits")
	}
}

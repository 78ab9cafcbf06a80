package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/ignclient"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/internal/testpki"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/skewgate"
)

// An era is a boot image's Ignition and a pool it cannot read: one needing
// the next spec, the skew policy for v2.27 (no newer spec exists).
var eras = []struct {
	client, skewDir, skewPolicy string
	want                        []string // in the issue message
}{
	{"v2.27.0", "../fixtures/cluster", "minIgnitionVersion: {worker: 2.28.0}\n", []string{"Ignition v2.27.0 is older than v2.28.0"}},
	{"v2.24.0", "../fixtures/features/setuid-3.6", "", []string{"reads config spec 3.5.0 at most", "needs spec 3.6.0"}},
	{"v2.19.0", "../fixtures/features/cex-3.5", "", []string{"reads config spec 3.4.0 at most", "needs spec 3.5.0", "cex"}},
	{"v2.14.0", "../fixtures/features/tang-advertisement-3.4", "", []string{"reads config spec 3.3.0 at most", "needs spec 3.4.0", "advertisement"}},
	{"v2.9.0", "../fixtures/features/kargs-3.3", "", []string{"reads config spec 3.2.0 at most", "needs spec 3.3.0", "shouldNotExist"}},
	// v2.0 asks for spec 2.2 in Accept: served 3.0 by its User-Agent.
	{"v2.0.0", "../fixtures/features/sha256-3.1", "", []string{"Ignition (v2.0.0) reads config spec 3.0.0 at most", "needs spec 3.1.0"}},
	{"v0.35.0", "../fixtures/features/luks-3.2", "", []string{"reads config spec 2.2.0 at most", "$.storage.luks.0"}},
}

// tlsServer serves a fixture tree over HTTPS with a certificate signed by a
// CA made for the test, as the MCS serves port 22623; tokens, when given,
// are required.
func tlsServer(t *testing.T, dir, policy string, tokens ...string) (url string, ca *testpki.CA, pools map[string]*render.Result) {
	t.Helper()
	h, pools := handler(t, dir, policy, tokens...)
	ca = testpki.NewCA(t)
	ts := httptest.NewUnstartedServer(h)
	ts.TLS = tlsConf(ca.Serving(t).TLS(t))
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts.URL, ca, pools
}

// installerFetch runs a client the way an installed node boots: HTTPS with
// the cluster CA in its pointer config, the token in it when given.
func installerFetch(t *testing.T, c ignclient.Client, url string, ca *testpki.CA, token string) *ignclient.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return ignclient.Boot(ctx, t, c, url, ignclient.Options{CA: ca.PEM, Token: token, HTTPTotal: 20 * time.Second})
}

// Every era boots an admitted pool through the installer's TLS pointer
// config (spec 3.1+ clients with a bearer token the server requires), and
// gets only the issue stub for a pool it cannot read.
func TestEras(t *testing.T) {
	cs := clients(t)
	kargs := kargsPool(t)
	for _, era := range eras {
		c := cs[era.client]
		t.Run(era.client, func(t *testing.T) {
			t.Parallel()
			t.Run("admitted", func(t *testing.T) {
				t.Parallel()
				dir, token := "../fixtures/cluster", "s3cret-"+era.client
				if c.ChrootUsers {
					dir = kargs // no users (see TestAdmitted)
				}
				if !c.Headers() {
					token = "" // a spec-2 or spec-3.0 pointer carries no header
				}
				var tokens []string
				if token != "" {
					tokens = []string{"another", token}
				}
				url, ca, pools := tlsServer(t, dir, "", tokens...)
				res := installerFetch(t, c, url+"/config/worker", ca, token)
				checkAdmitted(t, res, pools["worker"])
			})
			t.Run("stub", func(t *testing.T) {
				t.Parallel()
				url, ca, _ := tlsServer(t, era.skewDir, era.skewPolicy)
				res := installerFetch(t, c, url+"/config/worker", ca, "")
				checkStubOnly(t, res, era.want)
			})
		})
	}
}

// checkAdmitted: the pool's files and units, the node files, no issue.
func checkAdmitted(t *testing.T, res *ignclient.Result, worker *render.Result) {
	t.Helper()
	if checkAdmittedFiles(t, res, worker) == 0 {
		t.Fatal("the admitted pool has no unit to check")
	}
}

// checkAdmittedFiles checks what landed and returns how many units it checked.
func checkAdmittedFiles(t *testing.T, res *ignclient.Result, worker *render.Result) int {
	t.Helper()
	want := []string{"/etc/machine-config-daemon/node-annotations.json", "/etc/kubernetes/kubeconfig", "/etc/ignition-machine-config-encapsulated.json"}
	for _, f := range worker.Config.Storage.Files {
		want = append(want, f.Path)
	}
	units := 0
	for _, u := range worker.Config.Systemd.Units {
		if u.Contents != nil && *u.Contents != "" {
			want = append(want, "/etc/systemd/system/"+u.Name)
			units++
		}
		for _, d := range u.Dropins {
			if d.Contents != nil && *d.Contents != "" {
				want = append(want, path.Join("/etc/systemd/system", u.Name+".d", d.Name))
				units++
			}
		}
	}
	for _, p := range want {
		if _, err := res.ReadFile(p); err != nil {
			t.Errorf("%s missing: %v", p, err)
		}
	}
	if _, err := res.ReadFile(skewgate.IssuePath("worker")); err == nil {
		t.Error("an admitted node got the skew issue file")
	}
	return units
}

// checkStubOnly: the issue file says why, and nothing of the pool landed.
func checkStubOnly(t *testing.T, res *ignclient.Result, want []string) {
	t.Helper()
	msg, err := res.ReadFile(skewgate.IssuePath("worker"))
	if err != nil {
		t.Fatalf("no issue file: %v\n%s", err, res.Tail())
	}
	for _, w := range append(want, `pool "worker"`, "Reference: mcs-skew-") {
		if !strings.Contains(string(msg), w) {
			t.Errorf("issue message lacks %q:\n%s", w, msg)
		}
	}
	var landed []string
	nodeFiles(t, res, func(p string) {
		if !strings.HasPrefix(p, "/etc/issue.d/") && !seeded[p] {
			landed = append(landed, p)
		}
	})
	if len(landed) > 0 {
		t.Errorf("a refused node got more than the issue file: %v", landed)
	}
}

// seeded are the files ignclient puts in every scratch root, and the one
// Ignition (v2.13+) writes about its own run.
var seeded = map[string]bool{"/etc/passwd": true, "/etc/group": true, "/etc/shadow": true, "/etc/gshadow": true, "/etc/.ignition-result.json": true}

// A node retrying through an mcs restart (connection refused meanwhile)
// boots once it is back: here it starts before mcs listens at all.
func TestServerRestarts(t *testing.T) {
	c := ignclient.Get(t, "v0.35.0")
	h, pools := handler(t, kargsPool(t), "")
	addr, listen := testkit.ReservedAddr(t)
	ca := testpki.NewCA(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := ignclient.Start(ctx, c, "https://"+addr+"/config/worker", ignclient.Options{CA: ca.PEM})
	testkit.Eventually(t, 30*time.Second, "a refused connection", func() error {
		if !strings.Contains(run.Log(), "connection refused") {
			return fmt.Errorf("the client has not tried yet")
		}
		return nil
	})
	ln := listen()
	srv := &http.Server{Handler: h, TLSConfig: tlsConf(ca.Serving(t).TLS(t))}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	res, err := run.Wait()
	if res != nil {
		t.Cleanup(func() { os.RemoveAll(res.Dir) })
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Tail())
	}
	if !strings.Contains(res.Log, "connection refused") {
		t.Errorf("the client never saw mcs down:\n%s", res.Tail())
	}
	checkAdmittedFiles(t, res, pools["worker"])
}

func tlsConf(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// nodeFiles calls f with the node path of every regular file in the root.
func nodeFiles(t *testing.T, res *ignclient.Result, f func(string)) {
	t.Helper()
	err := filepath.WalkDir(res.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(res.Root, p)
		f("/" + filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

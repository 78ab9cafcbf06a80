package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/ignclient"
	"github.com/ignition-mcs/mcs/internal/testpki"
)

// Real nodes against the whole server over TLS, as the installer points
// them at it: each waits on an answer it retries while the admin fixes the
// cause, and boots once it is fixed.

// tlsInstance is mcs serving dir on HTTPS (and plain HTTP for the test's
// own probes) with a certificate signed by a CA made for the test.
type tlsInstance struct {
	*instance
	tlsBase           string
	ca                *testpki.CA
	certFile, keyFile string
}

var tlsListening = regexp.MustCompile(`listening on (https://\S+)`)

func startTLS(t *testing.T, dir string, pair func(*testpki.CA, testing.TB) testpki.Pair, args ...string) *tlsInstance {
	t.Helper()
	ca := testpki.NewCA(t)
	tlsDir := t.TempDir()
	ti := &tlsInstance{ca: ca, certFile: filepath.Join(tlsDir, "tls.crt"), keyFile: filepath.Join(tlsDir, "tls.key")}
	ti.install(t, pair(ca, t))
	ti.instance = start(t, append([]string{"--dir", dir, "--listen-plain", "127.0.0.1:0", "--listen-tls", "127.0.0.1:0",
		"--cert", ti.certFile, "--key", ti.keyFile, "--poll", "50ms", "--debounce", "20ms"}, args...)...)
	waitFor(t, "TLS listener", func() bool {
		m := tlsListening.FindStringSubmatch(ti.stdout.String())
		if m != nil {
			ti.tlsBase = m[1]
		}
		return m != nil
	})
	return ti
}

func (ti *tlsInstance) install(t *testing.T, p testpki.Pair) {
	installCert(t, ti.certFile, ti.keyFile, string(p.CertPEM), string(p.KeyPEM))
}

// boot starts a node fetching pool through the installer's pointer config.
func (ti *tlsInstance) boot(t *testing.T, version, pool, token string) *ignclient.Running {
	t.Helper()
	c := ignclient.Get(t, version)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ignclient.Start(ctx, c, ti.tlsBase+"/config/"+pool, ignclient.Options{CA: ti.ca.PEM, Token: token})
}

// booted waits for the node and returns what landed.
func booted(t *testing.T, run *ignclient.Running) *ignclient.Result {
	t.Helper()
	res, err := run.Wait()
	if res != nil {
		t.Cleanup(func() { os.RemoveAll(res.Dir) })
	}
	if err != nil {
		log := ""
		if res != nil {
			log = res.Log
		}
		t.Fatalf("node did not boot: %v\n%s", err, tailString(log, 3000))
	}
	return res
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// waitLogged waits for a log line and requires that the node is still
// waiting (it must not have given up on a 4xx).
func waitLogged(t *testing.T, in *instance, run *ignclient.Running, what string) {
	t.Helper()
	waitFor(t, what, func() bool {
		select {
		case <-run.Done():
			_, err := run.Wait()
			t.Fatalf("the node stopped before the fix: %v", err)
		default:
		}
		return strings.Contains(in.stderr.String(), what)
	})
}

// infraMC is the one MachineConfig of the infra pool (reliability_test.go's pools).
const infraMC = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-infra-hello
  labels: {machineconfiguration.openshift.io/role: infra}
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
      - {path: /etc/infra-hello, mode: 420, contents: {source: "data:,infra"}}
`

// A node whose pool does not exist yet waits (500, retried); the cause is
// logged once, counted and shown in /status; the node boots once the admin
// creates the pool.
func TestNodeWaitsForPool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "50-worker.yaml", mc("50-worker-hello", "one"))
	ti := startTLS(t, dir, (*testpki.CA).Serving)
	waitFor(t, "ready", func() bool { c, _, _ := ti.get("/readyz"); return c == 200 })
	run := ti.boot(t, "v2.9.0", "infra", "")
	waitLogged(t, ti.instance, run, `cause=unknown-pool pool=infra`)
	waitFor(t, "a retry", func() bool {
		_, m, _ := ti.get("/metrics")
		return regexp.MustCompile(`mcs_config_refusals_total\{cause="unknown-pool"\} [2-9]`).Match(m)
	})
	_, st, _ := ti.get("/status")
	if !strings.Contains(string(st), `"cause": "unknown-pool"`) || !strings.Contains(string(st), `"NodesWaiting"`) {
		t.Errorf("/status does not show the waiting node:\n%s", st)
	}
	writeFile(t, dir, "pools.yaml", pools)
	writeFile(t, dir, "60-infra.yaml", infraMC)
	res := booted(t, run)
	if b, err := res.ReadFile("/etc/infra-hello"); err != nil || string(b) != "infra" {
		t.Fatalf("/etc/infra-hello: %q %v", b, err)
	}
	if n := strings.Count(ti.stderr.String(), "node waiting"); n != 1 {
		t.Errorf("%d WARN lines for one waiting node, want 1:\n%s", n, ti.stderr.String())
	}
}

// A node whose token is not accepted yet waits (511, retried) and boots
// once the admin adds its token to --auth-token-file.
func TestTokenAddedWhileNodeWaits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "50-worker.yaml", mc("50-worker-hello", "one"))
	tokens := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, filepath.Dir(tokens), "tokens", "token-a\n")
	ti := startTLS(t, dir, (*testpki.CA).Serving, "--auth-token-file", tokens)
	run := ti.boot(t, "v2.14.0", "worker", "token-b")
	waitLogged(t, ti.instance, run, "cause=token-rejected")
	writeFile(t, filepath.Dir(tokens), "tokens", "token-a\ntoken-b\n")
	res := booted(t, run)
	if b, err := res.ReadFile("/etc/50-worker-hello"); err != nil || string(b) != "one" {
		t.Fatalf("/etc/50-worker-hello: %q %v", b, err)
	}
	if strings.Contains(ti.stderr.String(), "token-b") {
		t.Error("the log carries a token")
	}
}

// The serving certificate has expired while a node boots: the node retries
// the TLS failure, and boots once the admin rotates the certificate.
func TestCertificateRotatedWhileNodeRetries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "50-worker.yaml", mc("50-worker-hello", "one"))
	expired := func(ca *testpki.CA, t testing.TB) testpki.Pair {
		return ca.Issue(t, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	}
	ti := startTLS(t, dir, expired)
	run := ti.boot(t, "v0.35.0", "worker", "")
	waitLogged(t, ti.instance, run, "TLS handshake error")
	ti.install(t, ti.ca.Serving(t))
	res := booted(t, run)
	if b, err := res.ReadFile("/etc/50-worker-hello"); err != nil || string(b) != "one" {
		t.Fatalf("/etc/50-worker-hello: %q %v", b, err)
	}
	if !strings.Contains(res.Log, "certificate has expired") {
		t.Errorf("the node never saw the expired certificate:\n%s", tailString(res.Log, 3000))
	}
}

package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/ignclient"
	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/internal/testpki"
	"github.com/ignition-mcs/mcs/serve/status"
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
	ti.tlsBase = ti.tlsURL(t)
	return ti
}

// tlsURL is https://host:port of in's TLS listener, bound on port 0, once
// it says so.
func (in *instance) tlsURL(t *testing.T) string {
	t.Helper()
	var base string
	waitFor(t, "TLS listener", func() bool {
		m := tlsListening.FindStringSubmatch(in.stdout.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	return base
}

func (ti *tlsInstance) install(t *testing.T, p testpki.Pair) {
	installCert(t, ti.certFile, ti.keyFile, string(p.CertPEM), string(p.KeyPEM))
}

// bootAll starts a node of every era fetching pool through the installer's
// pointer config, with token(c) in it; a node whose pointer config cannot
// carry a header (spec 2, spec 3.0) is left out when there is one.
func (ti *tlsInstance) bootAll(t *testing.T, pool string, token func(ignclient.Client) string) map[string]*ignclient.Running {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	runs := map[string]*ignclient.Running{}
	for _, c := range ignclient.Find(t) {
		tok := ""
		if token != nil {
			tok = token(c)
		}
		if !c.Headers() && tok != "" {
			continue
		}
		runs[c.Version] = ignclient.Start(ctx, c, ti.tlsBase+"/config/"+pool, ignclient.Options{CA: ti.ca.PEM, Token: tok})
	}
	return runs
}

// bootedAll waits for every node and checks that each saw the failure
// (its log says saw) and then booted: path landed with want.
func bootedAll(t *testing.T, runs map[string]*ignclient.Running, saw, path, want string) {
	t.Helper()
	for v, run := range runs {
		res := run.Booted(t)
		if !strings.Contains(res.Log, saw) {
			t.Errorf("%s never saw %q:\n%s", v, saw, res.Tail())
		}
		if b, err := res.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s: %s: %q %v", v, path, b, err)
		}
	}
}

// waitLogged waits for a log line and requires that no node has stopped
// meanwhile (it must not have given up on a 4xx).
func waitLogged(t *testing.T, in *instance, runs map[string]*ignclient.Running, what string) {
	t.Helper()
	waitFor(t, what, func() bool { return running(t, runs) && strings.Contains(in.stderr.String(), what) })
}

// waitRefused waits until every node was refused for cause at least twice
// (the request log names the cause and the client), none having stopped.
func waitRefused(t *testing.T, in *instance, runs map[string]*ignclient.Running, cause string) {
	t.Helper()
	waitFor(t, "every node refused for "+cause, func() bool {
		if !running(t, runs) {
			return false
		}
		logs := in.stderr.String()
		for v := range runs {
			re := regexp.MustCompile(`(?m)^.*cause=` + cause + ` .*client=Ignition/` + regexp.QuoteMeta(v) + ` .*$`)
			if len(re.FindAllString(logs, 2)) < 2 {
				return false
			}
		}
		return true
	})
}

func running(t *testing.T, runs map[string]*ignclient.Running) bool {
	t.Helper()
	for v, run := range runs {
		select {
		case <-run.Done():
			_, err := run.Wait()
			t.Fatalf("node %s stopped before the fix: %v", v, err)
		default:
		}
	}
	return true
}

// infraMC is the one MachineConfig of the infra pool (reliability_test.go's
// pools) with its file's mode (nil: 420).
func infraMC(mode any) string {
	return mctest.Config{Name: "50-infra-hello", Role: "infra", Files: []mctest.File{{Path: "/etc/infra-hello", Source: "data:,infra", Mode: mode}}}.YAML()
}

// Nodes of every era whose pool does not exist yet wait (500, retried);
// the cause is logged once per client address, counted and shown in
// /status; they boot once the admin creates the pool.
func TestNodeWaitsForPool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "50-worker.yaml", mc("50-worker-hello", "one"))
	ti := startTLS(t, dir, (*testpki.CA).Serving)
	waitFor(t, "ready", func() bool { c, _, _ := ti.get("/readyz"); return c == 200 })
	runs := ti.bootAll(t, "infra", nil)
	waitRefused(t, ti.instance, runs, "unknown-pool")
	_, m, _ := ti.get("/metrics")
	if !regexp.MustCompile(`mcs_config_refusals_total\{cause="unknown-pool"\} ([0-9]{2,}|[7-9])`).Match(m) {
		t.Error("the retries are not counted")
	}
	_, st, _ := ti.get("/status")
	var status status.Status
	if err := json.Unmarshal(st, &status); err != nil || len(status.UnknownPools) != 1 || status.UnknownPools[0].Pool != "infra" {
		t.Errorf("/status does not count the requests for the unknown pool (%v):\n%s", err, st)
	}
	writeFile(t, dir, "pools.yaml", pools)
	writeFile(t, dir, "60-infra.yaml", infraMC(nil))
	bootedAll(t, runs, "GET result: Internal Server Error", "/etc/infra-hello", "infra")
	if n := strings.Count(ti.stderr.String(), "node waiting"); n != 1 {
		t.Errorf("%d WARN lines for nodes from one address, want 1:\n%s", n, ti.stderr.String())
	}
}

// tokenPad starts the test's tokens: 128 bits and more whatever follows.
const tokenPad = "token-Zq8wX3kP9mL2vN7rT4yB-"

// Nodes whose token is not accepted yet wait (511, retried) and boot once
// the admin adds their tokens to --auth-token-file.
func TestTokenAddedWhileNodeWaits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "50-worker.yaml", mc("50-worker-hello", "one"))
	tokDir := t.TempDir()
	writeFile(t, tokDir, "tokens", tokenPad+"a\n")
	ti := startTLS(t, dir, (*testpki.CA).Serving, "--auth-token-file", filepath.Join(tokDir, "tokens"))
	token := func(c ignclient.Client) string { return tokenPad + c.Version }
	runs := ti.bootAll(t, "worker", token)
	waitRefused(t, ti.instance, runs, "token-rejected")
	all := tokenPad + "a\n"
	for v := range runs {
		all += tokenPad + v + "\n"
	}
	writeFile(t, tokDir, "tokens", all)
	bootedAll(t, runs, "GET result: Network Authentication Required", "/etc/50-worker-hello", "one")
	if strings.Contains(ti.stderr.String(), tokenPad) {
		t.Error("the log carries a token")
	}
}

// The serving certificate has expired while nodes boot: they retry the TLS
// failure, and boot once the admin rotates the certificate.
func TestCertificateRotatedWhileNodeRetries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "50-worker.yaml", mc("50-worker-hello", "one"))
	expired := func(ca *testpki.CA, t testing.TB) testpki.Pair {
		return ca.Issue(t, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	}
	ti := startTLS(t, dir, expired)
	runs := ti.bootAll(t, "worker", nil)
	// Each node's own log, not the server's handshake errors (which name no
	// client): a fast retrier must not stand in for a node yet to try.
	waitFor(t, "every node refusing the expired certificate twice", func() bool {
		for _, run := range runs {
			if strings.Count(run.Log(), "certificate has expired") < 2 {
				return false
			}
		}
		return running(t, runs)
	})
	ti.install(t, ti.ca.Serving(t))
	bootedAll(t, runs, "certificate has expired", "/etc/50-worker-hello", "one")
}

// Nodes of a pool whose MachineConfigs have never rendered wait (500,
// retried; the body and /status name the error) and boot once the admin
// fixes them.
func TestNodeWaitsForBrokenPool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "50-worker.yaml", mc("50-worker-hello", "one"))
	writeFile(t, dir, "pools.yaml", pools)
	writeFile(t, dir, "60-infra.yaml", infraMC("bogus"))
	ti := startTLS(t, dir, (*testpki.CA).Serving)
	waitFor(t, "ready", func() bool { c, _, _ := ti.get("/readyz"); return c == 200 })
	runs := ti.bootAll(t, "infra", nil)
	waitRefused(t, ti.instance, runs, "pool-not-rendered")
	if code, body, _ := ti.get("/config/infra"); code != 500 || !strings.Contains(string(body), "60-infra.yaml") {
		t.Errorf("curl gets %d %q, want 500 naming the broken file", code, body)
	}
	writeFile(t, dir, "60-infra.yaml", infraMC(nil))
	bootedAll(t, runs, "GET result: Internal Server Error", "/etc/infra-hello", "infra")
}

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/syncbuf"
	"github.com/ignition-mcs/mcs/internal/testpki"
)

var admitListening = regexp.MustCompile(`listening on https://(\S+)/mutate`)

// startAdmit runs `mcs admit` with args and returns its address and an
// HTTPS client trusting its certificate.
func startAdmit(t *testing.T, args ...string) (string, *http.Client, *syncbuf.Buffer) {
	t.Helper()
	ca := testpki.NewCA(t)
	pair := ca.Serving(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, b := range map[string][]byte{cert: pair.CertPEM, key: pair.KeyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	stdout, stderr := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	go func() {
		done <- dispatch(ctx, append([]string{"admit", "--listen", "127.0.0.1:0", "--cert", cert, "--key", key}, args...), strings.NewReader(""), stdout, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("mcs admit: %v\n%s", err, stderr)
		}
	})
	var addr string
	kubetest.Eventually(t, time.Minute, "mcs admit listening", func() error {
		if m := admitListening.FindStringSubmatch(stdout.String()); m != nil {
			addr = m[1]
			return nil
		}
		return fmt.Errorf("stdout %q, stderr %q", stdout, stderr)
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	return addr, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}, stderr
}

func admitGet(t *testing.T, c *http.Client, addr, path string) (int, string) {
	t.Helper()
	res, err := c.Get("https://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// `mcs admit` as deployed, against an API server without a ClusterVersion:
// no ceiling, said at start (the log) and in /status; with --max-spec, that
// ceiling. Probes and mcs_admit_* metrics served over its TLS.
func TestAdmitCommand(t *testing.T) {
	kubeconfig, _, _ := controlPlane(t, false)
	addr, c, stderr := startAdmit(t, "--kubeconfig", kubeconfig)
	var status struct {
		Ceiling struct {
			Spec, Source string
		}
		CeilingKnown bool
		AboveCeiling string
	}
	kubetest.Eventually(t, time.Minute, "ready", func() error {
		if code, body := admitGet(t, c, addr, "/readyz"); code != 200 {
			return fmt.Errorf("/readyz %d %s", code, body)
		}
		return nil
	})
	_, body := admitGet(t, c, addr, "/status")
	if err := json.Unmarshal([]byte(body), &status); err != nil {
		t.Fatal(err)
	}
	if !status.CeilingKnown || status.Ceiling.Spec != "" || !strings.Contains(status.Ceiling.Source, "no ClusterVersion") || status.AboveCeiling != "warn" {
		t.Errorf("/status %s", body)
	}
	if !strings.Contains(stderr.String(), "no ClusterVersion in the cluster (not OpenShift): lowest spec, no ceiling") {
		t.Errorf("the log does not say there is no ceiling:\n%s", stderr)
	}
	if _, m := admitGet(t, c, addr, "/metrics"); !strings.Contains(m, "mcs_admit_ceiling_info{spec=\"none\"} 1") || !strings.Contains(m, "mcs_admit_review_duration_seconds_count 0") {
		t.Errorf("/metrics lacks the mcs_admit_ metrics")
	}

	addr, c, _ = startAdmit(t, "--kubeconfig", kubeconfig, "--max-spec", "3.2.0", "--above-ceiling", "deny")
	_, body = admitGet(t, c, addr, "/status")
	if !strings.Contains(body, `"spec": "3.2.0"`) || !strings.Contains(body, `--max-spec 3.2.0`) || !strings.Contains(body, `"aboveCeiling": "deny"`) {
		t.Errorf("/status with --max-spec: %s", body)
	}
}

// A missing serving certificate is said before anything says "listening",
// and before any API server is looked for.
func TestAdmitWithoutCertificate(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	err := dispatch(t.Context(), []string{"admit", "--listen", "127.0.0.1:0", "--cert", filepath.Join(dir, "tls.crt"), "--key", filepath.Join(dir, "tls.key"), "--kubeconfig", filepath.Join(dir, "none")}, strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "serving certificate --cert "+filepath.Join(dir, "tls.crt")) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("error %v", err)
	}
	if strings.Contains(stdout.String()+stderr.String(), "listening") {
		t.Errorf("said listening:\n%s%s", stdout.String(), stderr.String())
	}
}

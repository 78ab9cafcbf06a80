package apitest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const config35 = `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/motd","contents":{"source":"data:,hello"},"mode":420}]}}`

// writeThrough creates a MachineConfig and updates it, each within the
// webhook's timeout and a margin, and returns the stored spec version.
func writeThrough(t *testing.T, s *webhookServer, name string) string {
	t.Helper()
	res := s.cp.Dynamic.Resource(machineConfigs)
	limit := time.Duration(timeoutSeconds)*time.Second + 3*time.Second
	start := time.Now()
	got, err := createConfig(s.cp.Dynamic, name, config35)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	t.Cleanup(func() { _ = res.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	got.SetLabels(map[string]string{"edited": "yes"})
	updated, err := res.Update(context.Background(), got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update %s: %v", name, err)
	}
	if d := time.Since(start); d > 2*limit {
		t.Errorf("%s: create and update took %s, over twice %s", name, d, limit)
	}
	if updated.GetLabels()["edited"] != "yes" {
		t.Errorf("%s: the update was lost", name)
	}
	return storedVersion(updated)
}

// TestWebhookFailsOpen: with the webhook down, stalling past its timeout,
// or answering garbage, every write succeeds within the timeout and is
// stored as sent (failurePolicy Ignore); started again, it serves again.
func TestWebhookFailsOpen(t *testing.T) {
	s := setup(t)
	cases := []struct {
		name  string
		setup func(t *testing.T)
	}{
		{"down", func(t *testing.T) {
			s.down()
			t.Cleanup(func() { s.up(t) })
		}},
		{"stalls", func(t *testing.T) {
			s.handler.Store(ptr(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				<-r.Context().Done() // the API server gives up first
			})))
		}},
		{"garbage", func(t *testing.T) {
			s.handler.Store(ptr(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
				rw.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(rw, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"wrong","allowed":true,"patchType":"JSONPatch","patch":"bm90IGEgcGF0Y2g="}}`)
			})))
		}},
		{"not-json", func(t *testing.T) {
			s.handler.Store(ptr(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(rw, "<html>proxy error</html>")
			})))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.setup(t)
			if v := writeThrough(t, s, "fail-"+c.name); v != "3.5.0" {
				t.Errorf("stored at %s, want 3.5.0 as sent", v)
			}
		})
	}
	// Every case restored the webhook (up again, or setup's at the end of
	// the subtest): it lowers again.
	setup(t)
	if v := writeThrough(t, s, "fail-recovered"); v != "3.0.0" {
		t.Errorf("after recovery stored at %s, want 3.0.0", v)
	}
}

// TestCertificateReplaced: a serving certificate replaced on disk is used
// without a restart, and the API server goes on calling the webhook.
func TestCertificateReplaced(t *testing.T) {
	s := setup(t)
	next := s.ca.Serving(t)
	if err := s.writePair(next); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second) // certwatcher polls every 10 s besides file events
	for loaded := ""; loaded != next.Serial.String(); {
		select {
		case loaded = <-s.reloaded:
		case <-deadline:
			t.Fatal("the new certificate was not loaded within 30s")
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.ca.PEM)
	conn, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := conn.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(next.Serial) != 0 {
		t.Errorf("serving certificate serial %s, want the new %s", got, next.Serial)
	}
	if v := writeThrough(t, s, "after-reload"); v != "3.0.0" {
		t.Errorf("after the reload stored at %s, want 3.0.0", v)
	}
}

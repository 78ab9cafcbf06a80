package admitd

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/testpki"
)

// The webhook serves over TLS, is ready once its ceiling is known (fixed,
// or read from a cluster without a ClusterVersion), reports the watch of
// stored configs, and stops with ctx.
func TestServe(t *testing.T) {
	ca := testpki.NewCA(t)
	pair := ca.Serving(t)
	cert, key := pair.Files(t, t.TempDir())
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	for _, tc := range []struct {
		name    string
		maxSpec convert.Version
	}{{"fixed", convert.V3_4}, {"from the cluster", convert.Version{}}} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"}:     "MachineConfigList",
				{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigpools"}: "MachineConfigPoolList",
				{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}:                  "ClusterVersionList",
			})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				done <- Serve(ctx, ln, Config{Client: dyn, Registry: prometheus.NewRegistry(), Log: slog.New(slog.DiscardHandler),
					MaxSpec: tc.maxSpec, Recheck: time.Hour, Ticks: make(chan time.Time), Cert: cert, Key: key})
			}()
			base := "https://" + ln.Addr().String()
			err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				resp, err := client.Get(base + "/readyz")
				if err != nil {
					return false, nil
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK, nil
			})
			if err != nil {
				t.Fatalf("never ready: %v", err)
			}
			resp, err := client.Get(base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), "mcs_admit_") {
				t.Errorf("/metrics has no mcs_admit_ series:\n%.400s", body)
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Serve did not return after ctx ended")
			}
		})
	}
}

// Only a request with one of the tokens reads /status and /metrics.
func TestBearer(t *testing.T) {
	if bearer(nil) != nil {
		t.Fatal("no tokens: want every request allowed")
	}
	allowed := bearer(func() [][]byte { return [][]byte{[]byte("all-pools-token"), []byte("another-token")} })
	for _, c := range []struct {
		header string
		want   bool
	}{
		{"Bearer all-pools-token", true},
		{"Bearer another-token", true},
		{"Bearer worker-token", false},
		{"Bearer all-pools-toke", false},
		{"Bearer ", false},
		{"Basic all-pools-token", false},
		{"", false},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/status", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		if got := allowed(r); got != c.want {
			t.Errorf("Authorization %q: %v, want %v", c.header, got, c.want)
		}
	}
}

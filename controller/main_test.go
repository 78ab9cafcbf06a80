package controller

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/source/kube"
)

// One control plane serves every test and benchmark of the package.
var shared = &kubetest.Shared{Benchmarks: true}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	stop := shared.Setup("controller", true)
	defer stop()
	return m.Run()
}

// needControlPlane returns the shared control plane emptied of every
// object the tests make, or ends the test.
func needControlPlane(t testing.TB) *kubetest.ControlPlane {
	t.Helper()
	cp := shared.Need(t)
	cp.DeleteAll(t, kube.MachineConfigs, kube.MachineConfigPools, kube.ControllerConfigs, Nodes)
	// The Lease's namespace; each test has a Lease of its own.
	cp.ApplyFiles(t, filepath.Join("..", "deploy", "namespace.yaml"))
	return cp
}

var realdata = filepath.Join("..", "..", "shared", "realdata")

// clusterDir is the shared realdata set when it is beside the clone (it
// must be under CI), else fixtures/cluster, an in-repo set of its shape.
func clusterDir(t testing.TB, name string) string {
	d := filepath.Join(realdata, name)
	if _, err := os.Stat(d); err == nil {
		return d
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no %s under CI", d)
	}
	return filepath.Join("..", "fixtures", "cluster")
}

func yamlFiles(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no objects in %s: %v", dir, err)
	}
	return files
}

var object = kubetest.Object

func mcObject(t testing.TB, name, role, content string) *unstructured.Unstructured {
	return kubetest.MachineConfig(t, name, role, content)
}

func poolObject(t testing.TB, name string) *unstructured.Unstructured { return kubetest.Pool(t, name) }

func nodeObject(name string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Node")
	u.SetName(name)
	u.SetAnnotations(annotations)
	return u
}

// running is a controller started by a test.
type running struct {
	*Controller
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan struct{}
}

// stop ends it as a crash would when the Lease is not released on cancel:
// nothing more is sent, and the Lease runs out.
func (r *running) stop() {
	r.cancel()
	<-r.done
}

// fastLease makes failover quick enough for tests.
func fastLease(cfg *Config) {
	cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod = 2*time.Second, 1500*time.Millisecond, 200*time.Millisecond
}

// startController runs a controller as cfg says (REST defaults to the
// admin's) until the test ends.
func startController(t testing.TB, cp *kubetest.ControlPlane, cfg Config) *running {
	t.Helper()
	if cfg.REST == nil {
		cfg.REST = cp.Admin
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	if cfg.LeaseName == "" {
		cfg.LeaseName = leaseName(t)
	}
	if cfg.LeaseDuration == 0 {
		fastLease(&cfg)
	}
	cfg.Debounce = 20 * time.Millisecond
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Controller: c, reg: reg, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := c.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(r.stop)
	return r
}

// leaseName is the test's own Lease, a valid object name.
func leaseName(t testing.TB) string {
	n := strings.ToLower(t.Name())
	n = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, n)
	return strings.Trim(n, "-")
}

// pool reads a pool fresh from the API server.
func pool(t testing.TB, cp *kubetest.ControlPlane, name string) *unstructured.Unstructured {
	t.Helper()
	p, err := cp.Dynamic.Resource(kube.MachineConfigPools).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// renderDegraded returns the pool's RenderDegraded condition, or nil.
func renderDegraded(p *unstructured.Unstructured) map[string]any {
	conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == ConditionRenderDegraded {
			return m
		}
	}
	return nil
}

// renderedConfigs lists the rendered MachineConfigs of a pool, by name.
func renderedConfigs(t testing.TB, cp *kubetest.ControlPlane, pool string) map[string]*unstructured.Unstructured {
	t.Helper()
	l, err := cp.Dynamic.Resource(kube.MachineConfigs).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range l.Items {
		u := &l.Items[i]
		if strings.HasPrefix(u.GetName(), "rendered-"+pool+"-") {
			out[u.GetName()] = u
		}
	}
	return out
}

// serviceAccount applies deploy/'s namespace and the controller's
// manifests and returns a client config with the controller's token.
func serviceAccount(t testing.TB, cp *kubetest.ControlPlane) *rest.Config {
	t.Helper()
	return cp.ServiceAccount(t, "mcs", "mcs-controller", filepath.Join("..", "deploy"), "namespace.yaml", filepath.Join("controller", "controller.yaml"))
}

var testLogger = kubetest.Logger

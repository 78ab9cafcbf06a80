package kube

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/source"
)

// Without an API server: the caches filled by hand render as the directory
// source renders the same objects.
func TestLoadSelfFromCache(t *testing.T) {
	for _, cluster := range []string{"aws", "none"} {
		t.Run(cluster, func(t *testing.T) {
			dir := clusterDir(t, cluster)
			s := cachedSource(t, dir, Config{})
			got, err := s.Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want, err := (&source.Dir{Path: dir}).Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Results) != len(want.Results) || len(got.Results) == 0 || len(got.Failed) != 0 {
				t.Fatalf("%d results (%v), want %d", len(got.Results), got.Failed, len(want.Results))
			}
			for i, r := range got.Results {
				w := want.Results[i]
				if r.Pool != w.Pool || r.Name != w.Name || r.Spec != w.Spec || string(r.MachineConfig.Spec.Config) != string(w.MachineConfig.Spec.Config) {
					t.Errorf("pool %s: %s at %s, want %s %s at %s", r.Pool, r.Name, r.Spec, w.Pool, w.Name, w.Spec)
				}
			}
			if got.ControllerConfig == nil || got.ControllerConfig.BaseOSContainerImage != want.ControllerConfig.BaseOSContainerImage {
				t.Errorf("ControllerConfig %+v", got.ControllerConfig)
			}
		})
	}
}

// A broken MachineConfig fails the pools that select it, located by object
// and path, and not the others.
func TestLoadSelfFailureIsThePools(t *testing.T) {
	s := cachedSource(t, clusterDir(t, "aws"), Config{})
	bad := &unstructured.Unstructured{}
	if err := bad.UnmarshalJSON([]byte(`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig",
	  "metadata":{"name":"60-master-bad","labels":{"machineconfiguration.openshift.io/role":"master"}},
	  "spec":{"config":{"ignition":{"version":"3.2.0"}},"kernelType":"turbo"}}`)); err != nil {
		t.Fatal(err)
	}
	s.mcs.Add(bad)
	in, err := s.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Results) != 1 || in.Results[0].Pool != "worker" {
		t.Fatalf("results %v", in.Results)
	}
	if msg := in.Failed["master"].Error(); !strings.Contains(msg, "kubernetes: MachineConfig/60-master-bad: $.spec.kernelType:") {
		t.Errorf("master error %q", msg)
	}
}

func TestLoadRefusesWhileFailing(t *testing.T) {
	s := cachedSource(t, clusterDir(t, "aws"), Config{})
	s.failed("machineconfigs", errors.New("machineconfigs: connection refused"))
	_, err := s.Load(context.Background())
	var ae *apiError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "failing since") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Load: %v", err)
	}
	s.succeeded("machineconfigs")
	if _, err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestLoadWaitsForSync(t *testing.T) {
	s, err := New(Config{REST: &rest.Config{Host: "https://127.0.0.1:1"}, SyncWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.failed("discovery", errors.New("no route"))
	_, err = s.Load(context.Background())
	var ns *notSyncedError
	if !errors.As(err, &ns) || !strings.Contains(err.Error(), "caches not synced after 20ms: no route") {
		t.Fatalf("Load: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.cfg.SyncWait = time.Hour
	if _, err := s.Load(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Load with a cancelled context: %v", err)
	}
}

// The observer turns what the informers' requests meet into the health
// Load reports.
func TestObserver(t *testing.T) {
	status := http.StatusOK
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
	defer api.Close()
	s := cachedSource(t, clusterDir(t, "aws"), Config{})
	client := &http.Client{Transport: &observer{s: s, next: http.DefaultTransport}}
	get := func(path string) {
		t.Helper()
		resp, err := client.Get(api.URL + path)
		if err == nil {
			resp.Body.Close()
		}
	}
	const mcs = "/apis/machineconfiguration.openshift.io/v1/machineconfigs"
	const pools = "/apis/machineconfiguration.openshift.io/v1/machineconfigpools/worker"
	for _, step := range []struct {
		name    string
		status  int
		path    string
		failing string // in the health error; "" for healthy
	}{
		{"ok", 200, mcs, ""},
		{"other paths are not ours", 500, "/api/v1/secrets", ""},
		{"a server error", 503, mcs, "machineconfigs: GET " + mcs + ": 503"},
		{"a second resource fails", 500, pools, "machineconfigpools: GET"},
		{"one recovers, the other still fails", 200, mcs, "machineconfigpools"},
		{"forbidden is the reflector's to report", 403, pools, "machineconfigpools"},
		{"all recovered", 200, pools + "?watch=true", ""},
	} {
		status = step.status
		get(step.path)
		err := s.health.get().err
		if step.failing == "" {
			if err != nil {
				t.Fatalf("%s: failing: %v", step.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), step.failing) {
			t.Fatalf("%s: health %v, want %q", step.name, err, step.failing)
		}
		if step.name == "one recovers, the other still fails" && strings.Contains(err.Error(), "machineconfigs:") {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	if up := testutil.ToFloat64(s.m.up); up != 1 {
		t.Errorf("mcs_kube_api_up %v", up)
	}
	if n := testutil.ToFloat64(s.m.errors); n != 2 {
		t.Errorf("mcs_kube_api_errors_total %v, want 2", n)
	}
	// A refused connection is an outage too.
	api.Close()
	get(mcs)
	if err := s.health.get().err; err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("after close: %v", err)
	}
}

func TestResourceOf(t *testing.T) {
	testkit.Table(t, "resourceOf", resourceOf, map[string]string{
		"/apis/machineconfiguration.openshift.io/v1/machineconfigs":        "machineconfigs",
		"/apis/machineconfiguration.openshift.io/v1/machineconfigpools/w":  "machineconfigpools",
		"/apis/machineconfiguration.openshift.io/v1/controllerconfigs/a/b": "controllerconfigs",
		"/apis/machineconfiguration.openshift.io/v2/machineconfigs":        "",
		"/api/v1/namespaces/x/secrets":                                     "",
		"/apis/machineconfiguration.openshift.io/v1":                       "",
		"/apis/operator.openshift.io/v1/machineconfigurations/cluster":     "machineconfigurations",
		"/apis/operator.openshift.io/v1/ingresscontrollers":                "",
		"/prefix/apis/machineconfiguration.openshift.io/v1/machineconfigs": "",
	})
}

// Only changes that can change what is served signal: a pool's status
// does not in self mode, and does in pool mode when it names another config.
func TestHandlerKeys(t *testing.T) {
	pool := func(selector, status string) *unstructured.Unstructured {
		return poolObject(t, `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigPool","metadata":{"name":"worker","resourceVersion":"`+status+`"},
		"spec":{"machineConfigSelector":{"matchLabels":{"role":"`+selector+`"}},"configuration":{"name":"rendered-worker-b"}},
		"status":{"updatedMachineCount":`+map[string]string{"a": "0", "b": "1"}[status]+`,"configuration":{"name":"rendered-worker-a"}}}`)
	}
	for _, tc := range []struct {
		name     string
		mode     Mode
		old, new *unstructured.Unstructured
		signal   bool
	}{
		{"self: status only", ModeSelf, pool("worker", "a"), pool("worker", "b"), false},
		{"self: selector", ModeSelf, pool("worker", "a"), pool("infra", "a"), true},
		{"pool: selector only", ModePool, pool("worker", "a"), pool("infra", "a"), false},
		{"pool: the served config changes", ModePool, pool("worker", "a"), pool("worker", "b"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := cachedSource(t, clusterDir(t, "aws"), Config{Mode: tc.mode})
			h := s.handler(schema.GroupVersionResource{Resource: "machineconfigpools"}, s.poolKey)
			h.OnUpdate(tc.old, tc.new)
			select {
			case <-s.notify:
				if !tc.signal {
					t.Error("signalled")
				}
			default:
				if tc.signal {
					t.Error("not signalled")
				}
			}
		})
	}
}

// The discoverer reads what client-go's discovery client reads, and fails
// the same ways: not found (the group is not served) is apierrors' NotFound.
func TestAPIDiscoverer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/apis/machineconfiguration.openshift.io/v1":
			w.Write([]byte(`{"kind":"APIResourceList","groupVersion":"machineconfiguration.openshift.io/v1","resources":[{"name":"machineconfigs","namespaced":false,"kind":"MachineConfig","verbs":["get","list","watch"]}]}`))
		case "/apis/broken.example.com/v1":
			w.Write([]byte(`{"resources":`))
		case "/apis/down.example.com/v1":
			http.Error(w, "etcd unavailable", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	d, err := newDiscoverer(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	list, err := d.ServerResourcesForGroupVersion(context.Background(), "machineconfiguration.openshift.io/v1")
	if err != nil || len(list.APIResources) != 1 || list.APIResources[0].Name != "machineconfigs" {
		t.Fatalf("list %+v, %v", list, err)
	}
	if _, err := d.ServerResourcesForGroupVersion(context.Background(), "operator.openshift.io/v1"); !apierrors.IsNotFound(err) {
		t.Errorf("unserved group: %v, want not found", err)
	}
	if _, err := d.ServerResourcesForGroupVersion(context.Background(), "down.example.com/v1"); err == nil || apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "etcd unavailable") {
		t.Errorf("503: %v", err)
	}
	if _, err := d.ServerResourcesForGroupVersion(context.Background(), "broken.example.com/v1"); err == nil || !strings.Contains(err.Error(), "broken.example.com/v1") {
		t.Errorf("bad JSON: %v", err)
	}
}

// A discovery request the server never answers ends with the source's
// context (and after discoveryTimeout at the latest).
func TestAPIDiscovererHangs(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	d, err := newDiscoverer(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := d.ServerResourcesForGroupVersion(ctx, "machineconfiguration.openshift.io/v1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the context's deadline", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("returned after %s", took)
	}
}

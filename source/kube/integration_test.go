package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

var realdata = filepath.Join("..", "..", "..", "shared", "realdata")

// stack is one mcs replica: a source, its reloader and its server.
type stack struct {
	src serve.Source
	srv *serve.Server
	reg *prometheus.Registry
}

// serveSource runs src behind a Reloader and Server until the test ends.
func serveSource(t *testing.T, src serve.Source, reg *prometheus.Registry) *stack {
	return serveSourceGated(t, src, reg, nil)
}

// serveSourceGated is serveSource with a skew gate in front of /config.
func serveSourceGated(t *testing.T, src serve.Source, reg *prometheus.Registry, gate *skewgate.Gate) *stack {
	t.Helper()
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	st := &stack{src: src, reg: reg, srv: serve.New(serve.Config{Registry: reg, Source: src.String(), Gate: gate})}
	rl := &serve.Reloader{Source: src, Server: st.srv, Debounce: 20 * time.Millisecond, Logger: testLogger(t)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rl.Run(ctx, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	return st
}

// kubeStack is a replica reading the control plane.
func (cp *controlPlane) kubeStack(t *testing.T, cfg Config) *stack {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	return serveSource(t, cp.newSource(t, cfg), reg)
}

type reply struct {
	code       int
	etag, body string
}

func (st *stack) get(t *testing.T, path, accept string, userAgent ...string) reply {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if len(userAgent) > 0 {
		req.Header.Set("User-Agent", userAgent[0])
	}
	w := httptest.NewRecorder()
	st.srv.ServeHTTP(w, req)
	return reply{w.Code, w.Header().Get("ETag"), w.Body.String()}
}

func accept(v convert.Version) string {
	return "application/vnd.coreos.ignition+json;version=" + v.String()
}

// waitServing waits until every pool named serves, and the status names
// no render error.
func (st *stack) waitServing(t *testing.T, pools ...string) {
	t.Helper()
	eventually(t, 30*time.Second, st.src.String()+" serving "+strings.Join(pools, ", "), func() error {
		s := st.srv.Status()
		if !s.Ready {
			return fmt.Errorf("not ready (last error %+v)", s.LastError)
		}
		if s.LastError != nil {
			return errors.New(s.LastError.Message)
		}
		for _, p := range pools {
			if r := st.get(t, "/config/"+p, ""); r.code != http.StatusOK {
				return fmt.Errorf("%s: %d %s", p, r.code, r.body)
			}
		}
		return nil
	})
}

// responses are every pool's replies at every spec, and to a client that
// names none, keyed "pool@spec".
func (st *stack) responses(t *testing.T) map[string]reply {
	t.Helper()
	out := map[string]reply{}
	for _, p := range st.srv.Status().Pools {
		out[p.Name+"@default"] = st.get(t, "/config/"+p.Name, "")
		for _, v := range convert.OutputVersions {
			out[p.Name+"@"+v.String()] = st.get(t, "/config/"+p.Name, accept(v))
		}
	}
	return out
}

func sameResponses(t *testing.T, what string, a, b map[string]reply) {
	t.Helper()
	if len(a) == 0 {
		t.Fatalf("%s: nothing served", what)
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		x, y := a[k], b[k]
		if x.code != y.code || x.etag != y.etag || x.body != y.body {
			t.Errorf("%s: %s differs: %d %s (%d bytes) vs %d %s (%d bytes)", what, k, x.code, x.etag, len(x.body), y.code, y.etag, len(y.body))
		}
	}
	if len(a) != len(b) {
		t.Errorf("%s: %d responses vs %d", what, len(a), len(b))
	}
}

func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Skipf("no real data in %s: %v", dir, err)
	}
	return files
}

// The objects of a real cluster, read from the API server, render to the
// same bytes and ETags as the same objects read from a directory: one
// renderer, whichever the source.
func TestSelfModeMatchesDirectory(t *testing.T) {
	cp := needControlPlane(t)
	for _, cluster := range []string{"aws", "none"} {
		t.Run(cluster, func(t *testing.T) {
			resetObjects(t, cp)
			dir := filepath.Join(realdata, cluster)
			cp.applyFiles(t, yamlFiles(t, dir)...)
			fromDir := serveSource(t, &source.Dir{Path: dir, Poll: time.Hour}, nil)
			fromKube := cp.kubeStack(t, Config{})
			fromDir.waitServing(t, "master", "worker")
			fromKube.waitServing(t, "master", "worker")
			sameResponses(t, "directory vs kubernetes", fromDir.responses(t), fromKube.responses(t))
		})
	}
}

const testPool = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: POOL
spec:
  machineConfigSelector:
    matchExpressions:
    - {key: machineconfiguration.openshift.io/role, operator: In, values: [worker, POOL]}
  nodeSelector:
    matchLabels: {node-role.kubernetes.io/POOL: ""}
`

const testMC = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: NAME
  labels: {machineconfiguration.openshift.io/role: ROLE}
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
      - {path: /etc/NAME, mode: 420, contents: {source: "data:,CONTENT"}}
`

func object(t *testing.T, tmpl string, kv ...string) *unstructured.Unstructured {
	t.Helper()
	objs := decodeObjects(t, []byte(strings.NewReplacer(kv...).Replace(tmpl)))
	if len(objs) != 1 {
		t.Fatalf("%d objects", len(objs))
	}
	return objs[0]
}

func mcObject(t *testing.T, name, role, content string) *unstructured.Unstructured {
	return object(t, testMC, "NAME", name, "ROLE", role, "CONTENT", content)
}

func poolObj(t *testing.T, name string) *unstructured.Unstructured {
	return object(t, testPool, "POOL", name)
}

// Objects created, changed and deleted in the cluster are served, and two
// replicas serve identical bytes and ETags at every step.
func TestFollowsChangesAndReplicasAgree(t *testing.T) {
	cp := needControlPlane(t)
	cp.apply(t, poolObj(t, "worker"), mcObject(t, "50-worker", "worker", "one"))
	a := cp.kubeStack(t, Config{})
	b := cp.kubeStack(t, Config{})
	a.waitServing(t, "worker")
	b.waitServing(t, "worker")
	first := a.get(t, "/config/worker", "")
	if !strings.Contains(first.body, "data:,one") {
		t.Fatalf("served %s", first.body)
	}
	sameResponses(t, "replicas", a.responses(t), b.responses(t))

	steps := []struct {
		name   string
		change func()
		pool   string
		want   string // in the pool's body
	}{
		{"a MachineConfig changed", func() { cp.apply(t, mcObject(t, "50-worker", "worker", "two")) }, "worker", "data:,two"},
		{"a MachineConfig added", func() { cp.apply(t, mcObject(t, "60-worker", "worker", "three")) }, "worker", "/etc/60-worker"},
		{"a pool added", func() { cp.apply(t, poolObj(t, "infra"), mcObject(t, "70-infra", "infra", "four")) }, "infra", "/etc/70-infra"},
		{"a MachineConfig deleted", func() {
			if err := cp.dyn.Resource(MachineConfigs).Delete(context.Background(), "60-worker", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "worker", "!/etc/60-worker"},
	}
	for _, step := range steps {
		before := a.get(t, "/config/"+step.pool, "")
		start := time.Now()
		step.change()
		for _, st := range []*stack{a, b} {
			eventually(t, 10*time.Second, step.name, func() error {
				r := st.get(t, "/config/"+step.pool, "")
				has := strings.Contains(r.body, strings.TrimPrefix(step.want, "!"))
				if r.code != http.StatusOK || has == strings.HasPrefix(step.want, "!") {
					return fmt.Errorf("%d, body without the change", r.code)
				}
				if r.etag == before.etag {
					return errors.New("ETag unchanged")
				}
				return nil
			})
		}
		t.Logf("%s: served by both replicas in %s", step.name, time.Since(start).Round(time.Millisecond))
		sameResponses(t, "replicas after "+step.name, a.responses(t), b.responses(t))
	}
	// The infra pool merges the worker configs before its own.
	if r := a.get(t, "/config/infra", ""); !strings.Contains(r.body, "data:,two") {
		t.Errorf("infra lacks the worker config: %s", r.body)
	}
}

// Pool mode serves the rendered MachineConfig the pool names, re-encoded,
// under the cluster's own name, switching to the target once a machine has
// updated to it.
func TestPoolMode(t *testing.T) {
	cp := needControlPlane(t)
	dir := filepath.Join(realdata, "aws")
	cp.applyFiles(t, yamlFiles(t, dir)...)
	set, err := render.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	self, errs := set.Render(render.Options{})
	if errs != nil {
		t.Fatal(errs)
	}
	// The cluster's rendered configs: the same content under names that
	// are not mcs's, written at spec 3.5 as upstream's controller writes.
	names := map[string]string{}
	for _, r := range self {
		mc := *r.MachineConfig
		mc.Metadata.Name = "rendered-" + r.Pool + "-cluster1"
		cfg, err := convert.Encode(&r.Config, convert.V3_5, false)
		if err != nil {
			t.Fatal(err)
		}
		mc.Spec.Config = cfg
		cp.apply(t, toObject(t, &mc))
		names[r.Pool] = mc.Metadata.Name
		cp.apply(t, withConfiguration(t, cp, r.Pool, mc.Metadata.Name, mc.Metadata.Name, 3))
	}
	st := cp.kubeStack(t, Config{Mode: ModePool})
	st.waitServing(t, "master", "worker")
	src := st.src.(*Source)
	in, err := src.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range in.Results {
		var want *render.Result
		for _, r := range self {
			if r.Pool == res.Pool {
				want = r
			}
		}
		if res.Name != names[res.Pool] || res.Spec != want.Spec {
			t.Errorf("pool %s: %s at %s, want %s at %s", res.Pool, res.Name, res.Spec, names[res.Pool], want.Spec)
		}
		a, _ := convert.Encode(&res.Config, convert.Newest, false)
		b, _ := convert.Encode(&want.Config, convert.Newest, false)
		if string(a) != string(b) {
			t.Errorf("pool %s: config differs from the self render", res.Pool)
		}
	}
	// Nodes are told the cluster's name.
	annotations := func(pool string) string {
		r := st.get(t, "/config/"+pool, accept(convert.V3_4))
		var cfg struct {
			Storage struct {
				Files []struct {
					Path     string
					Contents struct{ Source string }
				}
			}
		}
		if err := json.Unmarshal([]byte(r.body), &cfg); err != nil {
			t.Fatalf("%d %s: %v", r.code, r.body, err)
		}
		for _, f := range cfg.Storage.Files {
			if f.Path == "/etc/machine-config-daemon/node-annotations.json" {
				return f.Contents.Source
			}
		}
		t.Fatal("no node annotations served")
		return ""
	}
	if got := annotations("worker"); !strings.Contains(got, "rendered-worker-cluster1") {
		t.Errorf("annotations %s", got)
	}

	// An update: the target changes; until a machine has it, new nodes get
	// the old config, then the new.
	next := mcObject(t, "rendered-worker-cluster2", "", "next")
	next.SetLabels(nil)
	cp.apply(t, next)
	cp.apply(t, withConfiguration(t, cp, "worker", "rendered-worker-cluster2", names["worker"], 0))
	time.Sleep(300 * time.Millisecond) // a change would have been served by now
	if got := annotations("worker"); !strings.Contains(got, "rendered-worker-cluster1") {
		t.Errorf("switched before any machine updated: %s", got)
	}
	cp.apply(t, withConfiguration(t, cp, "worker", "rendered-worker-cluster2", names["worker"], 1))
	eventually(t, 10*time.Second, "the new target served", func() error {
		if got := annotations("worker"); !strings.Contains(got, "rendered-worker-cluster2") {
			return errors.New(got)
		}
		return nil
	})
	if r := st.get(t, "/config/worker", ""); !strings.Contains(r.body, "data:,next") {
		t.Errorf("new target's content not served")
	}

	// A pool naming a config that does not exist fails alone, keeping
	// what it served; the others are untouched.
	cp.apply(t, withConfiguration(t, cp, "worker", "rendered-worker-gone", "rendered-worker-gone", 1))
	eventually(t, 10*time.Second, "the failure reported", func() error {
		for _, p := range st.srv.Status().Pools {
			if p.Name == "worker" && strings.Contains(p.Error, "rendered-worker-gone, which does not exist") {
				return nil
			}
		}
		return errors.New("not reported")
	})
	if got := annotations("worker"); !strings.Contains(got, "rendered-worker-cluster2") {
		t.Errorf("the failed pool stopped serving its last render: %s", got)
	}
	if got := annotations("master"); !strings.Contains(got, "rendered-master-cluster1") {
		t.Errorf("master %s", got)
	}
}

// withConfiguration is pool with the spec and status configurations named.
func withConfiguration(t *testing.T, cp *controlPlane, pool, target, current string, updated int64) *unstructured.Unstructured {
	t.Helper()
	p := poolObj(t, pool)
	if cur, err := cp.dyn.Resource(MachineConfigPools).Get(context.Background(), pool, metav1.GetOptions{}); err == nil {
		p = cur
	}
	unstructured.SetNestedField(p.Object, target, "spec", "configuration", "name")
	unstructured.SetNestedField(p.Object, map[string]any{
		"configuration":       map[string]any{"name": current},
		"machineCount":        int64(3),
		"updatedMachineCount": updated,
		"readyMachineCount":   updated,
	}, "status")
	return p
}

func toObject(t *testing.T, v any) *unstructured.Unstructured {
	t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	return u
}

// The ServiceAccount and ClusterRole of deploy/ are all the source needs,
// in both modes; the identity can read nothing else and write nothing.
func TestDeployRBACIsEnough(t *testing.T) {
	cp := needControlPlane(t)
	cp.applyFiles(t, yamlFiles(t, filepath.Join(realdata, "aws"))...)
	sa := cp.serviceAccount(t)

	for _, mode := range []Mode{ModeSelf, ModePool} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == ModePool {
				for _, pool := range []string{"master", "worker"} {
					mc := mcObject(t, "rendered-"+pool+"-x", "", pool)
					mc.SetLabels(nil)
					cp.apply(t, mc, withConfiguration(t, cp, pool, mc.GetName(), mc.GetName(), 1))
				}
			}
			st := cp.kubeStack(t, Config{REST: sa, Mode: mode, SkewPolicy: true})
			st.waitServing(t, "master", "worker")
			m := st.src.(*Source).m
			if n := testutil.ToFloat64(m.errors); n != 0 {
				t.Errorf("%v API errors as the ServiceAccount", n)
			}
			if up := testutil.ToFloat64(m.up); up != 1 {
				t.Errorf("mcs_kube_api_up %v", up)
			}
		})
	}

	client, err := kubernetes.NewForConfig(sa)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.CoreV1().Secrets("mcs").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing secrets: %v, want forbidden", err)
	}
	if _, err := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing config maps: %v, want forbidden", err)
	}
	saDyn := cp.newDynamic(t, sa)
	if _, err := saDyn.Resource(MachineConfigs).Create(ctx, mcObject(t, "99-x", "worker", "x"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("creating a MachineConfig: %v, want forbidden", err)
	}
	if err := saDyn.Resource(MachineConfigPools).Delete(ctx, "worker", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("deleting a pool: %v, want forbidden", err)
	}
	if _, err := saDyn.Resource(MachineConfigurations).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing every MachineConfiguration: %v, want forbidden", err)
	}
}

// serviceAccount applies deploy/'s ServiceAccount and RBAC and returns a
// client config carrying a token for it, as the kubelet mounts one.
func (cp *controlPlane) serviceAccount(t *testing.T) *rest.Config {
	t.Helper()
	deploy := filepath.Join("..", "..", "deploy")
	cp.applyFiles(t, filepath.Join(deploy, "namespace.yaml"), filepath.Join(deploy, "serviceaccount.yaml"), filepath.Join(deploy, "rbac.yaml"))
	tr, err := cp.kube.CoreV1().ServiceAccounts("mcs").CreateToken(context.Background(), "mcs",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa := rest.AnonymousClientConfig(cp.admin)
	sa.BearerToken = tr.Status.Token
	return sa
}

// The control plane's life seen by a replica: started before the CRDs
// exist, then the API server stopped while serving and started again.
// Throughout, the last good render keeps serving and the trouble is
// reported; afterwards, changes are followed again.
func TestAPIServerLifecycle(t *testing.T) {
	if shared == nil && sharedErr == nil {
		kubetest.Missing(t, sharedMissing)
	}
	assets, err := kubetest.Assets()
	if err != nil {
		t.Fatal(err)
	}
	// Its own control plane, without the MachineConfig CRDs and with a
	// fixed certificate directory, so a restarted API server keeps the
	// certificates clients trust.
	certs := t.TempDir()
	cp, err := startControlPlane(assets, nil, func(e *envtest.Environment) {
		e.ControlPlane.APIServer = &envtest.APIServer{CertDir: certs}
		e.ControlPlaneStopTimeout = 2 * time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.stop) // after the replica below has stopped

	st := cp.kubeStack(t, Config{SyncWait: 500 * time.Millisecond})
	src := st.src.(*Source)
	_, err = src.Load(context.Background())
	var ns *NotSyncedError
	if !errors.As(err, &ns) || !strings.Contains(err.Error(), "install the MachineConfig CRDs") {
		t.Fatalf("Load without CRDs: %v", err)
	}
	if r := st.get(t, "/readyz", ""); r.code != http.StatusServiceUnavailable {
		t.Errorf("ready without CRDs: %d", r.code)
	}

	// Without the ControllerConfig CRD: served without one.
	crds, err := kubetest.CRDFiles(false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cp.admin, envtest.CRDInstallOptions{Paths: crds, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	cp.apply(t, poolObj(t, "worker"), mcObject(t, "50-worker", "worker", "before"))
	st.waitServing(t, "worker")
	before := st.get(t, "/config/worker", "")
	if testutil.ToFloat64(src.m.up) != 1 {
		t.Error("mcs_kube_api_up is not 1")
	}

	api := cp.env.ControlPlane.APIServer
	start := time.Now()
	// SIGTERM, then SIGKILL after StopTimeout: with watches open, a
	// graceful kube-apiserver shutdown can take a minute.
	stopErr := api.Stop()
	if stopErr != nil && !strings.Contains(stopErr.Error(), "timeout waiting") {
		t.Fatal(stopErr)
	}
	t.Logf("API server stopped in %s (%v)", time.Since(start).Round(time.Millisecond), stopErr)
	eventually(t, 15*time.Second, "the outage reported", func() error {
		le := st.srv.Status().LastError
		if le == nil {
			return errors.New("no error in /status")
		}
		if !strings.Contains(le.Message, "failing since") {
			return errors.New(le.Message)
		}
		return nil
	})
	t.Logf("outage reported after %s: %s", time.Since(start).Round(time.Millisecond), st.srv.Status().LastError.Message)
	var ae *APIError
	if _, err := src.Load(context.Background()); !errors.As(err, &ae) {
		t.Errorf("Load during the outage: %v", err)
	}
	if r := st.get(t, "/metrics", ""); !strings.Contains(r.body, "\nmcs_kube_api_up 0\n") {
		t.Error("/metrics does not say mcs_kube_api_up 0")
	}
	for range 3 {
		if r := st.get(t, "/config/worker", ""); r.code != http.StatusOK || r.etag != before.etag || r.body != before.body {
			t.Fatalf("during the outage: %d %s", r.code, r.etag)
		}
		if r := st.get(t, "/readyz", ""); r.code != http.StatusOK {
			t.Fatalf("not ready during the outage: %d", r.code)
		}
		time.Sleep(200 * time.Millisecond)
	}

	start = time.Now()
	if err := api.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the recovery noticed", func() error {
		if le := st.srv.Status().LastError; le != nil {
			return errors.New(le.Message)
		}
		return nil
	})
	t.Logf("recovered %s after the API server was started", time.Since(start).Round(time.Millisecond))
	cp.apply(t, mcObject(t, "50-worker", "worker", "after"))
	eventually(t, 30*time.Second, "a change after the outage served", func() error {
		if r := st.get(t, "/config/worker", ""); !strings.Contains(r.body, "data:,after") {
			return errors.New("old content")
		}
		return nil
	})
	t.Logf("change after the outage served %s after the restart", time.Since(start).Round(time.Millisecond))
}

func (cp *controlPlane) newDynamic(t *testing.T, c *rest.Config) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The cluster's MachineConfiguration is the skew policy: absent, none;
// set to a boot image older than the release supports, every node is
// answered with the stub; relaxed, nodes join again. All as the
// ServiceAccount of deploy/, whose rule names only that object.
func TestSkewPolicyFromCluster(t *testing.T) {
	cp := needControlPlane(t)
	cp.applyFiles(t, yamlFiles(t, filepath.Join(realdata, "aws"))...)
	gate := skewgate.New(nil, testLogger(t))
	reg := prometheus.NewRegistry()
	src := cp.newSource(t, Config{REST: cp.serviceAccount(t), SkewPolicy: true, Registerer: reg})
	st := serveSourceGated(t, src, reg, gate)
	st.waitServing(t, "master", "worker")
	if p := gate.Policy(); p.Mode != "" {
		t.Fatalf("without a MachineConfiguration: policy mode %q", p.Mode)
	}
	const ua = "Ignition/v2.27.0"
	stubbed := func() (bool, error) {
		r := st.get(t, "/config/worker", accept(convert.V3_5), ua)
		if r.code != http.StatusOK {
			return false, fmt.Errorf("%d %s", r.code, r.body)
		}
		return strings.Contains(r.body, "/etc/issue.d/mcs-cannot-join-worker.issue"), nil
	}
	if s, err := stubbed(); err != nil || s {
		t.Fatalf("without a policy: stubbed %v, %v", s, err)
	}

	policy := func(enforcement map[string]any) *unstructured.Unstructured {
		return toObject(t, map[string]any{
			"apiVersion": MachineConfigurations.GroupVersion().String(), "kind": "MachineConfiguration",
			"metadata": map[string]any{"name": ClusterMachineConfiguration},
			"spec":     map[string]any{"managementState": "Managed", "bootImageSkewEnforcement": enforcement},
		})
	}
	cp.apply(t, policy(map[string]any{"mode": "Manual", "manual": map[string]any{"mode": "OCPVersion", "ocpVersion": "4.12.0"}}))
	eventually(t, 10*time.Second, "the cluster's Manual policy stubbing nodes", func() error {
		if p := gate.Policy(); p.Mode != "Manual" {
			return fmt.Errorf("policy mode %q", p.Mode)
		}
		if s, err := stubbed(); err != nil || !s {
			return fmt.Errorf("stubbed %v, %v", s, err)
		}
		return nil
	})

	cp.apply(t, policy(map[string]any{"mode": "None"}))
	eventually(t, 10*time.Second, "mode None admitting nodes", func() error {
		if s, err := stubbed(); err != nil || s {
			return fmt.Errorf("stubbed %v, %v", s, err)
		}
		return nil
	})
	if n := testutil.ToFloat64(src.m.errors); n != 0 {
		t.Errorf("%v API errors as the ServiceAccount", n)
	}
}

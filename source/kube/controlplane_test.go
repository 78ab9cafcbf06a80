package kube

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ignition-mcs/mcs/internal/kubetest"
)

// One control plane (etcd + kube-apiserver) serves every test of the
// package but the outage test, which stops its own.
var (
	shared        *controlPlane
	sharedMissing string // why there is none: binaries missing (skip, or fail under CI)
	sharedErr     error  // the binaries are there but would not start (always a failure)
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	// envtest's logger and client-go's klog would print every retry
	// while the outage test has the API server down.
	ctrllog.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	if testing.Short() {
		sharedMissing = "-short given"
		return m.Run()
	}
	if why := noControlPlaneWanted(); why != "" {
		sharedMissing = why
		return m.Run()
	}
	assets, err := kubetest.Assets()
	if err != nil {
		sharedMissing = err.Error()
		return m.Run()
	}
	crds, err := kubetest.CRDFiles(true)
	if err != nil {
		sharedErr = err
		return m.Run()
	}
	start := time.Now()
	shared, sharedErr = startControlPlane(assets, crds)
	if sharedErr == nil {
		fmt.Fprintf(os.Stderr, "kube: control plane (kube-apiserver %s, etcd) up in %s\n", shared.version, time.Since(start).Round(time.Millisecond))
		defer func() {
			start := time.Now()
			shared.stop()
			fmt.Fprintf(os.Stderr, "kube: control plane stopped in %s\n", time.Since(start).Round(time.Millisecond))
		}()
	}
	return m.Run()
}

// noControlPlaneWanted says why this run needs no control plane: fuzzing
// (every fuzz worker process runs TestMain too), listing, or benchmarks alone.
func noControlPlaneWanted() string {
	val := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	switch {
	case val("test.fuzz") != "" || val("test.fuzzworker") == "true":
		return "fuzzing"
	case val("test.list") != "":
		return "listing"
	case val("test.run") == "^$":
		return "no tests selected"
	}
	return ""
}

type controlPlane struct {
	env     *envtest.Environment
	admin   *rest.Config
	dyn     dynamic.Interface
	kube    kubernetes.Interface
	mapper  meta.RESTMapper
	version string
}

func startControlPlane(assets string, crds []string, opts ...func(*envtest.Environment)) (*controlPlane, error) {
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDInstallOptions:        envtest.CRDInstallOptions{Paths: crds, ErrorIfPathMissing: true},
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	for _, o := range opts {
		o(env)
	}
	// Nothing but loopback here: no endpoint to reconcile.
	env.ControlPlane.GetAPIServer().Configure().Set("endpoint-reconciler-type", "none")
	admin, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest with %s: %w", assets, err)
	}
	cp := &controlPlane{env: env, admin: admin}
	if cp.dyn, err = dynamic.NewForConfig(admin); err == nil {
		cp.kube, err = kubernetes.NewForConfig(admin)
	}
	if err != nil {
		env.Stop()
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(admin)
	if err != nil {
		env.Stop()
		return nil, err
	}
	cp.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	if v, err := dc.ServerVersion(); err == nil {
		cp.version = v.GitVersion
	}
	return cp, nil
}

func (cp *controlPlane) stop() { cp.env.Stop() }

// needControlPlane returns the shared control plane, or ends the test: a
// skip that says how to get the binaries, or under CI (CI=true) a failure,
// so a pipeline cannot pass without having run these tests.
func needControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	if shared == nil {
		kubetest.Missing(t, sharedMissing)
	}
	resetObjects(t, shared)
	return shared
}

// resetObjects deletes every object the tests make, so tests sharing the
// control plane start from an empty cluster.
func resetObjects(t *testing.T, cp *controlPlane) {
	t.Helper()
	ctx := context.Background()
	for _, gvr := range []struct {
		r        schema.GroupVersionResource
		optional bool
	}{{MachineConfigs, false}, {MachineConfigPools, false}, {ControllerConfigs, true}, {MachineConfigurations, true}} {
		res := cp.dyn.Resource(gvr.r)
		err := res.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if err != nil && !(gvr.optional && apierrors.IsNotFound(err)) {
			t.Fatalf("deleting %s: %v", gvr.r.Resource, err)
		}
		eventually(t, 10*time.Second, "no "+gvr.r.Resource+" left", func() error {
			l, err := res.List(ctx, metav1.ListOptions{})
			if err != nil {
				if gvr.optional && apierrors.IsNotFound(err) {
					return nil
				}
				return err
			}
			if len(l.Items) > 0 {
				return fmt.Errorf("%d left", len(l.Items))
			}
			return nil
		})
	}
}

// eventually retries f every 50ms until it returns nil or the time is up.
func eventually(t *testing.T, within time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// decodeObjects reads every object of a YAML or JSON stream.
func decodeObjects(t testing.TB, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// apply creates each object (or updates it when it exists), dropping what
// a server sets. A status
// given is written through the status subresource.
func (cp *controlPlane) apply(t *testing.T, objs ...*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		o = o.DeepCopy()
		for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink"} {
			unstructured.RemoveNestedField(o.Object, "metadata", f)
		}
		// Exported objects name owners without their uid; the owners are
		// not here anyway.
		var owners []metav1.OwnerReference
		for _, r := range o.GetOwnerReferences() {
			if r.UID != "" {
				owners = append(owners, r)
			}
		}
		o.SetOwnerReferences(owners)
		status, hasStatus, _ := unstructured.NestedFieldCopy(o.Object, "status")
		gvk := o.GroupVersionKind()
		m, err := cp.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
		}
		var res dynamic.ResourceInterface = cp.dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			res = cp.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		got, err := res.Create(ctx, o, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var cur *unstructured.Unstructured
			if cur, err = res.Get(ctx, o.GetName(), metav1.GetOptions{}); err == nil {
				o.SetResourceVersion(cur.GetResourceVersion())
				got, err = res.Update(ctx, o, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			t.Fatalf("applying %s %s: %v", gvk.Kind, o.GetName(), err)
		}
		if hasStatus && m.Resource.Resource != "namespaces" {
			got.Object["status"] = status
			if _, err := res.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("status of %s %s: %v", gvk.Kind, o.GetName(), err)
			}
		}
	}
}

func (cp *controlPlane) applyFiles(t *testing.T, files ...string) {
	t.Helper()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cp.apply(t, decodeObjects(t, data)...)
	}
}

// newSource starts a Source as cfg says (REST defaults to the admin's)
// until the test ends.
func (cp *controlPlane) newSource(t *testing.T, cfg Config) *Source {
	t.Helper()
	if cfg.REST == nil {
		cfg.REST = cp.admin
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.Start(ctx)
	return s
}

// testLogger writes to the test's log, so a failure shows what the
// source saw; lines from goroutines still winding down after the test are
// dropped (t.Log would panic).
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

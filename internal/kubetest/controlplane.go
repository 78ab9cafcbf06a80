package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
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
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// ControlPlane is a running etcd and kube-apiserver with the MachineConfig
// CRDs installed, and admin clients for it.
type ControlPlane struct {
	Env   *envtest.Environment
	Admin *rest.Config
	Clients
	Version string
	mapper  meta.RESTMapper
}

// Clients are the dynamic and typed clients of one identity.
type Clients struct {
	Dynamic dynamic.Interface
	Kube    kubernetes.Interface
}

func newClients(c *rest.Config) (Clients, error) {
	d, err := dynamic.NewForConfig(c)
	if err != nil {
		return Clients{}, err
	}
	k, err := kubernetes.NewForConfig(c)
	return Clients{Dynamic: d, Kube: k}, err
}

// ClientsFor are the clients of c (a ServiceAccount's, say); an error fails t.
func ClientsFor(t testing.TB, c *rest.Config) Clients {
	t.Helper()
	cl, err := newClients(c)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// Start runs a control plane from the binaries in assets with the CRD files
// installed; opts adjust the environment before it starts.
func Start(assets string, crds []string, opts ...func(*envtest.Environment)) (*ControlPlane, error) {
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDInstallOptions:        envtest.CRDInstallOptions{Paths: crds, ErrorIfPathMissing: true},
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	for _, o := range opts {
		o(env)
	}
	// Nothing but loopback here: no endpoint to reconcile, and the address
	// to advertise named (in a network namespace of loopback only, as the
	// attack suite's, the API server finds no default route to pick one).
	env.ControlPlane.GetAPIServer().Configure().Set("endpoint-reconciler-type", "none")
	env.ControlPlane.GetAPIServer().Configure().Set("advertise-address", "127.0.0.1")
	admin, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest with %s: %w", assets, err)
	}
	cp := &ControlPlane{Env: env, Admin: admin}
	if err := cp.clients(); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return cp, nil
}

// New starts a control plane for t alone, with every CRD when all, and
// stops it when t ends. Under -short, or without the binaries, it ends t as
// missing does.
func New(t testing.TB, all bool, opts ...func(*envtest.Environment)) *ControlPlane {
	t.Helper()
	assets := NeedAssets(t)
	crds, err := CRDFiles(all)
	if err != nil {
		t.Fatal(err)
	}
	ctrllog.SetLogger(logr.Discard())
	cp, err := Start(assets, crds, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	return cp
}

// NeedAssets is findAssets for a test that starts a control plane of its own,
// or the end of the test: a skip under -short, else as missing says.
func NeedAssets(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no control plane")
	}
	assets, err := findAssets()
	if err != nil {
		missing(t, err.Error())
	}
	return assets
}

// Kubeconfig writes a kubeconfig file for a new user in system:masters, as
// an admin's kubeconfig is, and returns its path.
func (cp *ControlPlane) Kubeconfig(t testing.TB, user string) string {
	t.Helper()
	u, err := cp.Env.ControlPlane.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (cp *ControlPlane) clients() error {
	var err error
	if cp.Clients, err = newClients(cp.Admin); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Admin)
	if err != nil {
		return err
	}
	cp.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	if v, err := dc.ServerVersion(); err == nil {
		cp.Version = v.GitVersion
	}
	return nil
}

// Stop stops etcd and the API server.
func (cp *ControlPlane) Stop() { _ = cp.Env.Stop() }

// Eventually is testkit.Eventually: waits on a real API server.
func Eventually(t testing.TB, within time.Duration, what string, f func() error) {
	t.Helper()
	testkit.Eventually(t, within, what, f)
}

// DeleteAll deletes every object of each resource and waits until none is
// left; a resource the server does not serve is skipped.
func (cp *ControlPlane) DeleteAll(t testing.TB, resources ...schema.GroupVersionResource) {
	t.Helper()
	ctx := context.Background()
	for _, gvr := range resources {
		res := cp.Dynamic.Resource(gvr)
		if err := res.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			t.Fatalf("deleting %s: %v", gvr.Resource, err)
		}
		Eventually(t, 10*time.Second, "no "+gvr.Resource+" left", func() error {
			l, err := res.List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(l.Items) > 0 {
				return fmt.Errorf("%d left", len(l.Items))
			}
			return nil
		})
	}
}

// DecodeObjects reads every object of a YAML or JSON stream.
func DecodeObjects(t testing.TB, data []byte) []*unstructured.Unstructured {
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

// DecodeDir reads every object of every *.yaml file in dir, the files in
// name order; a directory without one fails t.
func DecodeDir(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no YAML files in %s (%v)", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, DecodeObjects(t, data)...)
	}
	return out
}

// Resource is the client for an object's kind, in its namespace if it has one.
func (cp *ControlPlane) Resource(t testing.TB, o *unstructured.Unstructured) (dynamic.ResourceInterface, schema.GroupVersionResource) {
	t.Helper()
	gvk := o.GroupVersionKind()
	m, err := cp.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return cp.Dynamic.Resource(m.Resource).Namespace(o.GetNamespace()), m.Resource
	}
	return cp.Dynamic.Resource(m.Resource), m.Resource
}

// Apply creates each object (or updates it when it exists), dropping what a
// server sets and owner references without a uid; a status given is written
// through the status subresource.
func (cp *ControlPlane) Apply(t testing.TB, objs ...*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		o = o.DeepCopy()
		for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink"} {
			unstructured.RemoveNestedField(o.Object, "metadata", f)
		}
		var owners []metav1.OwnerReference
		for _, r := range o.GetOwnerReferences() {
			if r.UID != "" {
				owners = append(owners, r)
			}
		}
		o.SetOwnerReferences(owners)
		status, hasStatus, _ := unstructured.NestedFieldCopy(o.Object, "status")
		res, gvr := cp.Resource(t, o)
		got, err := res.Create(ctx, o, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var cur *unstructured.Unstructured
			if cur, err = res.Get(ctx, o.GetName(), metav1.GetOptions{}); err == nil {
				o.SetResourceVersion(cur.GetResourceVersion())
				got, err = res.Update(ctx, o, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		if hasStatus && gvr.Resource != "namespaces" {
			got.Object["status"] = status
			if _, err := res.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("status of %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
}

// ApplyFiles applies every object of each file.
func (cp *ControlPlane) ApplyFiles(t testing.TB, files ...string) {
	t.Helper()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cp.Apply(t, DecodeObjects(t, data)...)
	}
}

// ApplyDir applies every object of every *.yaml file in dir, the files in
// name order; a directory without one fails t.
func (cp *ControlPlane) ApplyDir(t testing.TB, dir string) {
	t.Helper()
	cp.Apply(t, DecodeDir(t, dir)...)
}

// ServiceAccount applies the manifests named (relative to dir) and returns
// a client config carrying a token for the ServiceAccount namespace/name,
// as the kubelet mounts one.
func (cp *ControlPlane) ServiceAccount(t testing.TB, namespace, name, dir string, manifests ...string) *rest.Config {
	t.Helper()
	for _, m := range manifests {
		cp.ApplyFiles(t, filepath.Join(dir, m))
	}
	tr, err := cp.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa := rest.AnonymousClientConfig(cp.Admin)
	sa.BearerToken = tr.Status.Token
	return sa
}

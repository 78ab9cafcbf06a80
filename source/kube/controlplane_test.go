package kube

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ignition-mcs/mcs/internal/kubetest"
)

// One control plane (etcd + kube-apiserver) serves every test of the
// package but the outage test, which stops its own.
var (
	sharedCP = &kubetest.Shared{}
	shared   *controlPlane
)

func TestMain(m *testing.M) {
	sharedCP.Main(m, "kube", true, func(cp *kubetest.ControlPlane) { shared = wrap(cp) })
}

// controlPlane is kubetest's, with the short names these tests use.
type controlPlane struct {
	*kubetest.ControlPlane
	env   *envtest.Environment
	admin *rest.Config
	dyn   dynamic.Interface
	kube  kubernetes.Interface
}

func wrap(c *kubetest.ControlPlane) *controlPlane {
	return &controlPlane{ControlPlane: c, env: c.Env, admin: c.Admin, dyn: c.Dynamic, kube: c.Kube}
}

func startControlPlane(assets string, crds []string, opts ...func(*envtest.Environment)) (*controlPlane, error) {
	c, err := kubetest.Start(assets, crds, opts...)
	if err != nil {
		return nil, err
	}
	return wrap(c), nil
}

func (cp *controlPlane) stop() { cp.Stop() }

// needControlPlane returns the shared control plane emptied of every
// object the tests make, or ends the test: a skip that says how to get the
// binaries, or under CI (CI=true) a failure, so a pipeline cannot pass
// without having run these tests.
func needControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	sharedCP.Need(t)
	resetObjects(t, shared)
	return shared
}

// resetObjects deletes every object the tests make, so tests sharing the
// control plane start from an empty cluster.
func resetObjects(t *testing.T, cp *controlPlane) {
	t.Helper()
	cp.DeleteAll(t, MachineConfigs, MachineConfigPools, ControllerConfigs, MachineConfigurations)
}

var (
	eventually    = kubetest.Eventually
	decodeObjects = kubetest.DecodeObjects
)

func (cp *controlPlane) apply(t *testing.T, objs ...*unstructured.Unstructured) {
	t.Helper()
	cp.Apply(t, objs...)
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
	kubetest.Run(t, s)
	return s
}

var testLogger = kubetest.Logger

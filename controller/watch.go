package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ignition-mcs/mcs/source/kube"
)

// The objects the guards read besides what the renderer reads: the
// MachineConfig-generating sub-controllers' inputs, and the cluster's
// MachineConfiguration (irreconcilableValidationOverrides).
var (
	kubeletConfigs          = schema.GroupVersionResource{Group: kube.Group, Version: "v1", Resource: "kubeletconfigs"}
	containerRuntimeConfigs = schema.GroupVersionResource{Group: kube.Group, Version: "v1", Resource: "containerruntimeconfigs"}
)

// guardCaches are informers over the objects the guards read. A resource
// the API server does not serve (a cluster without the MCO's CRDs) is not
// watched, and its guard has nothing to wait for.
type guardCaches struct {
	log    *slog.Logger
	client dynamic.Interface
	disco  discovery.DiscoveryInterface
	notify chan struct{} // capacity 1: a guard's object changed

	synced atomic.Bool // every store below has listed
	// Set before synced is, read only after; nil when not served.
	kubelet, runtime, mcfg, cc cache.Store
	ccName                     string
}

func newGuardCaches(rc *rest.Config, ccName string, log *slog.Logger) (*guardCaches, error) {
	client, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &guardCaches{log: log, ccName: ccName, client: client, disco: disco, notify: make(chan struct{}, 1)}, nil
}

func (g *guardCaches) signal() {
	select {
	case g.notify <- struct{}{}:
	default:
	}
}

func (g *guardCaches) hasSynced() bool { return g.synced.Load() }

// served says which of the guards' resources the API server serves,
// retrying discovery until it answers or ctx ends.
func (g *guardCaches) served(ctx context.Context) (map[schema.GroupVersionResource]bool, error) {
	want := []schema.GroupVersionResource{kube.ControllerConfigs, kubeletConfigs, containerRuntimeConfigs, kube.MachineConfigurations}
	for wait := 200 * time.Millisecond; ; wait = min(2*wait, 10*time.Second) {
		out, err := g.discover(want)
		if err == nil {
			return out, nil
		}
		g.log.Warn("discovering the guards' resources; retrying", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

func (g *guardCaches) discover(want []schema.GroupVersionResource) (map[schema.GroupVersionResource]bool, error) {
	out := map[schema.GroupVersionResource]bool{}
	lists := map[string]*metav1.APIResourceList{}
	for _, gvr := range want {
		gv := gvr.GroupVersion().String()
		l, ok := lists[gv]
		if !ok {
			var err error
			l, err = g.disco.ServerResourcesForGroupVersion(gv)
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("discovering %s: %w", gv, err)
			}
			lists[gv] = l
		}
		if l == nil {
			continue
		}
		for _, r := range l.APIResources {
			if r.Name == gvr.Resource {
				out[gvr] = true
			}
		}
	}
	return out, nil
}

// run starts the informers and sets synced once they have listed.
func (g *guardCaches) run(ctx context.Context) {
	served, err := g.served(ctx)
	if err != nil {
		return
	}
	var syncs []cache.InformerSynced
	var wg sync.WaitGroup
	defer wg.Wait()
	add := func(gvr schema.GroupVersionResource, fieldSelector string) cache.Store {
		if !served[gvr] {
			return nil
		}
		inf := kube.NewInformer(g.client.Resource(gvr), gvr, fieldSelector)
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { g.signal() },
			UpdateFunc: func(any, any) { g.signal() },
			DeleteFunc: func(any) { g.signal() },
		})
		syncs = append(syncs, inf.HasSynced)
		wg.Add(1)
		go func() { defer wg.Done(); inf.RunWithContext(ctx) }()
		return inf.GetStore()
	}
	// The source watches the ControllerConfig too, but signals only what
	// changes a render; its status is what the guard waits on.
	g.cc = add(kube.ControllerConfigs, "metadata.name="+g.ccName)
	g.kubelet = add(kubeletConfigs, "")
	g.runtime = add(containerRuntimeConfigs, "")
	g.mcfg = add(kube.MachineConfigurations, "metadata.name="+clusterMachineConfiguration)
	if !cache.WaitForCacheSync(ctx.Done(), syncs...) {
		return
	}
	g.synced.Store(true)
	g.signal()
	<-ctx.Done()
}

// clusterMachineConfiguration is the MachineConfiguration the MCO reads.
const clusterMachineConfiguration = "cluster"

// controllerConfig returns the ControllerConfig rendered with, or nil.
func (g *guardCaches) controllerConfig() *unstructured.Unstructured {
	for _, u := range kube.Objects(g.cc) {
		if u.GetName() == g.ccName {
			return u
		}
	}
	return nil
}

// baseImage is the release's OS image, as the ControllerConfig names it.
func (g *guardCaches) baseImage() string {
	cc := g.controllerConfig()
	if cc == nil {
		return ""
	}
	if s, _, _ := unstructured.NestedString(cc.Object, "spec", "baseOSContainerImage"); s != "" {
		return s
	}
	s, _, _ := unstructured.NestedString(cc.Object, "spec", "osImageURL")
	return s
}

// machineConfiguration returns the cluster's MachineConfiguration, or nil.
func (g *guardCaches) machineConfiguration() *unstructured.Unstructured {
	for _, u := range kube.Objects(g.mcfg) {
		if u.GetName() == clusterMachineConfiguration {
			return u
		}
	}
	return nil
}

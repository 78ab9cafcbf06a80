package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/ignition-mcs/mcs/render"
)

// isRendered says whether a MachineConfig is a rendered config: one a pool
// owns as its controller, without labels. Self mode renders from the others
// only. Upstream would merge one into a pool whose selector matched no
// labels (a DoesNotExist expression), and render from its own output on
// every change; and a cluster keeps hundreds of them, each the size of a
// whole pool, which every render would otherwise decode.
func isRendered(u *unstructured.Unstructured) bool {
	if len(u.GetLabels()) > 0 {
		return false
	}
	for _, o := range u.GetOwnerReferences() {
		if o.Kind == render.KindMachineConfigPool && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

// inputIndex indexes the MachineConfigs a render reads (self mode): not
// the rendered configs, of which a cluster keeps hundreds or thousands
// (a worker edit adds one per pool), so a load lists only its inputs.
const inputIndex, inputValue = "input", "input"

// inputIndexers keep inputIndex as the informer's events come.
var inputIndexers = cache.Indexers{inputIndex: func(obj any) ([]string, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok && !isRendered(u) {
		return []string{inputValue}, nil
	}
	return nil, nil
}}

// inputs are the MachineConfigs of st a render reads, sorted by name.
func inputs(st cache.Store) ([]*unstructured.Unstructured, error) {
	ix, ok := st.(cache.Indexer)
	if !ok {
		return nil, fmt.Errorf("the MachineConfig cache is not indexed by %s", inputIndex)
	}
	objs, err := ix.ByIndex(inputIndex, inputValue)
	if err != nil {
		return nil, err
	}
	return sorted(objs), nil
}

// caches are the informers' stores, and what is read from them: the
// source renders from them and the controller reads them. A store is nil
// when its resource is not read (not served, or not asked for).
type caches struct {
	synced chan struct{} // closed once every required informer has synced
	// controllerConfigName names the ControllerConfig read.
	controllerConfigName string

	// Set before synced is closed, read only after.
	mcs, pools, ccs, mcfgs cache.Store
	// streams holds the OSImageStream, when the API server serves them.
	streams cache.Store
	// configMaps holds kubeconfig-data (Config.KubeconfigData); moscs,
	// mosbs and the registry's routes are for image mode (Config.ImageMode).
	configMaps, moscs, mosbs, routes cache.Store
}

// Synced reports whether every informer has listed its resource once (the
// controller renders and compares nothing before).
func (c *caches) Synced() bool {
	select {
	case <-c.synced:
		return true
	default:
		return false
	}
}

// Pool returns the cached MachineConfigPool named, or nil before the caches
// have synced or when there is none. It is the cache's own object: callers
// must not modify it (DeepCopy first).
func (c *caches) Pool(name string) *unstructured.Unstructured { return c.cached(c.pools, name) }

// MachineConfig returns the cached MachineConfig named, or nil, as Pool
// does. In self mode a rendered config is kept without its spec.
func (c *caches) MachineConfig(name string) *unstructured.Unstructured { return c.cached(c.mcs, name) }

// PoolNames lists the cached pools, sorted; none before the caches have synced.
func (c *caches) PoolNames() []string {
	if !c.Synced() {
		return nil
	}
	var out []string
	for _, u := range Objects(c.pools) {
		out = append(out, u.GetName())
	}
	return out
}

func (c *caches) cached(st cache.Store, name string) *unstructured.Unstructured {
	if !c.Synced() {
		return nil
	}
	return get(st, name)
}

// get is the object of st keyed name, or nil (st nil too).
func get(st cache.Store, name string) *unstructured.Unstructured {
	if st == nil {
		return nil
	}
	o, ok, _ := st.GetByKey(name)
	if !ok {
		return nil
	}
	u, _ := o.(*unstructured.Unstructured)
	return u
}

// MachineConfigs lists the cached MachineConfigs, sorted by name; none
// before the caches have synced. The objects are the cache's own.
func (c *caches) MachineConfigs() []*unstructured.Unstructured {
	if !c.Synced() {
		return nil
	}
	return Objects(c.mcs)
}

// ControllerConfigObject returns the cached ControllerConfig the source
// renders with, or nil.
func (c *caches) ControllerConfigObject() *unstructured.Unstructured {
	return c.cached(c.ccs, c.controllerConfigName)
}

// OSImageStreamObject returns the cached OSImageStream pools pick their
// OS images from, or nil.
func (c *caches) OSImageStreamObject() *unstructured.Unstructured {
	return c.cached(c.streams, osImageStreamName)
}

// controllerConfig is the ControllerConfig read, or nil; for the loads,
// which run once synced.
func (c *caches) controllerConfig() *unstructured.Unstructured {
	return get(c.ccs, c.controllerConfigName)
}

// Origin is the file name errors give objects read from the API server
// ("kubernetes: MachineConfig/x: $.path: ..."); the controller's errors
// about the objects it writes read the same.
const Origin = origin

package kube

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/render"
)

// IsRendered says whether a MachineConfig is a rendered config: one a pool
// owns as its controller, without labels. Self mode renders from the others
// only. Upstream would merge one into a pool whose selector matched no
// labels (a DoesNotExist expression), and render from its own output on
// every change; and a cluster keeps hundreds of them, each the size of a
// whole pool, which every render would otherwise decode.
func IsRendered(u *unstructured.Unstructured) bool {
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

// Pool returns the cached MachineConfigPool named, or nil before the caches
// have synced or when there is none. It is the cache's own object: callers
// must not modify it (DeepCopy first).
func (s *Source) Pool(name string) *unstructured.Unstructured { return s.cached(s.pools, name) }

// MachineConfig returns the cached MachineConfig named, or nil, as Pool does.
func (s *Source) MachineConfig(name string) *unstructured.Unstructured { return s.cached(s.mcs, name) }

// PoolNames lists the cached pools, sorted; none before the caches have synced.
func (s *Source) PoolNames() []string {
	if !s.Synced() {
		return nil
	}
	var out []string
	for _, u := range objects(s.pools) {
		out = append(out, u.GetName())
	}
	return out
}

func (s *Source) cached(st interface {
	GetByKey(string) (any, bool, error)
}, name string) *unstructured.Unstructured {
	if !s.Synced() || st == nil {
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
func (s *Source) MachineConfigs() []*unstructured.Unstructured {
	if !s.Synced() {
		return nil
	}
	return objects(s.mcs)
}

// ControllerConfigObject returns the cached ControllerConfig the source
// renders with, or nil.
func (s *Source) ControllerConfigObject() *unstructured.Unstructured {
	if !s.Synced() {
		return nil
	}
	return s.controllerConfig()
}

// Synced reports whether every informer has listed its resource once (the
// controller renders and compares nothing before).
func (s *Source) Synced() bool { return s.hasSynced() }

// Origin is the file name errors give objects read from the API server
// ("kubernetes: MachineConfig/x: $.path: ..."); the controller's errors
// about the objects it writes read the same.
const Origin = origin

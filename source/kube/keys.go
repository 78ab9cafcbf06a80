package kube

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/ignition-mcs/mcs/render"
)

// handler signals a change when an object's key changes: keys leave out
// what cannot change what is served (a pool's status in self mode, the
// ControllerConfig's status), so routine status writes do not re-render.
func (s *Source) handler(gvr schema.GroupVersionResource, key func(*unstructured.Unstructured) string) cache.ResourceEventHandler {
	changed := func() {
		s.m.events.WithLabelValues(gvr.Resource).Inc()
		s.signal()
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if u, ok := obj.(*unstructured.Unstructured); ok && key(u) == unread {
				return
			}
			changed()
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*unstructured.Unstructured)
			n, ok2 := newObj.(*unstructured.Unstructured)
			if ok1 && ok2 && key(o) == key(n) {
				return
			}
			changed()
		},
		DeleteFunc: func(any) { changed() },
	}
}

// unread is the key of an object nothing served is read from: its
// creation and changes signal nothing (its deletion still does).
const unread = "\x00unread"

// machineConfigKey: in self mode a rendered config is an output, never
// read by a render (isRendered), and a worker edit creates one per pool;
// only its deletion signals, for the controller, which writes it again if
// a pool names it.
func machineConfigKey(mode Mode) func(*unstructured.Unstructured) string {
	return func(u *unstructured.Unstructured) string {
		if mode == ModeSelf && isRendered(u) {
			return unread
		}
		return u.GetResourceVersion()
	}
}

// poolKey is what of a pool the mode serves from: its selector (self) or
// the rendered config it names (pool).
func (s *Source) poolKey(u *unstructured.Unstructured) string {
	if s.cfg.Mode == ModePool {
		name, _, err := renderedConfig(u)
		if err != nil {
			return "error: " + err.Error()
		}
		// An image-mode pool's image waits for its first updated machine.
		updated, _ := count(u.Object, "status", "updatedMachineCount")
		return jsonKey([]any{name, updated > 0})
	}
	sel, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "machineConfigSelector")
	stream, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "osImageStream")
	return jsonKey([]any{sel, stream})
}

// skewPolicyKey is what of a MachineConfiguration the policy comes from.
func skewPolicyKey(u *unstructured.Unstructured) string {
	if u.GetName() != clusterMachineConfiguration {
		return ""
	}
	spec, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "bootImageSkewEnforcement")
	status, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "bootImageSkewEnforcementStatus")
	return jsonKey([]any{spec, status})
}

func controllerConfigKey(u *unstructured.Unstructured) string {
	spec, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec")
	a := u.GetAnnotations()
	return jsonKey([]any{spec, a[render.AnnotationReleaseImageVersion], a[render.AnnotationControllerConfigVersion]})
}

// osImageStreamKey is what of the OSImageStream a render or the
// controller's guard reads: its streams and the release it was written for.
func osImageStreamKey(u *unstructured.Unstructured) string {
	status, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status")
	return jsonKey([]any{status, u.GetAnnotations()[render.AnnotationReleaseImageVersion]})
}

// jsonKey encodes v deterministically (encoding/json sorts map keys).
func jsonKey(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

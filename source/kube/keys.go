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

// The trigger keys below are each a projection of an object, a struct
// hashed whole (jsonKey): what a render, the node files or the guards read
// of it, so that a change anywhere else signals nothing and a change there
// always does. TestTriggerKeysCoverTheRender holds them to what the render
// decodes.

// poolServed is what a render reads of a pool (self mode): the spec fields
// render.PoolSpecFieldsRead names.
type poolServed struct {
	Spec map[string]any
}

// poolPointed is what the pool mode serves from: the rendered config the
// pool names, and whether an image-mode pool's image can be served yet
// (it waits for the pool's first updated machine).
type poolPointed struct {
	Rendered, Err string
	Updated       bool
}

// poolKey is what of a pool the mode serves from.
func (s *Source) poolKey(u *unstructured.Unstructured) string {
	if s.cfg.Mode == ModePool {
		var in poolPointed
		name, _, err := renderedConfig(u)
		if err != nil {
			in.Err = err.Error()
		}
		updated, _ := count(u.Object, "status", "updatedMachineCount")
		in.Rendered, in.Updated = name, updated > 0
		return jsonKey(in)
	}
	in := poolServed{Spec: map[string]any{}}
	for _, f := range render.PoolSpecFieldsRead() {
		v, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", f)
		in.Spec[f] = v
	}
	return jsonKey(in)
}

// skewPolicyInput is what of the cluster's MachineConfiguration the skew
// policy comes from.
type skewPolicyInput struct {
	Enforcement, Status any
}

func skewPolicyKey(u *unstructured.Unstructured) string {
	if u.GetName() != clusterMachineConfiguration {
		return ""
	}
	var in skewPolicyInput
	in.Enforcement, _, _ = unstructured.NestedFieldNoCopy(u.Object, "spec", "bootImageSkewEnforcement")
	in.Status, _, _ = unstructured.NestedFieldNoCopy(u.Object, "status", "bootImageSkewEnforcementStatus")
	return jsonKey(in)
}

// controllerConfigInput is what a render and the node files read of the
// ControllerConfig: its spec, whole, and the two annotations; not its
// status, which the template controller writes all the time.
type controllerConfigInput struct {
	Spec                                   any
	ReleaseImageVersion, ControllerVersion string
}

func controllerConfigKey(u *unstructured.Unstructured) string {
	in := controllerConfigInput{}
	in.Spec, _, _ = unstructured.NestedFieldNoCopy(u.Object, "spec")
	a := u.GetAnnotations()
	in.ReleaseImageVersion, in.ControllerVersion = a[render.AnnotationReleaseImageVersion], a[render.AnnotationControllerConfigVersion]
	return jsonKey(in)
}

// osImageStreamInput is what of the OSImageStream a render or the
// controller's guard reads: its streams and the release it was written for.
type osImageStreamInput struct {
	Status              any
	ReleaseImageVersion string
}

func osImageStreamKey(u *unstructured.Unstructured) string {
	in := osImageStreamInput{ReleaseImageVersion: u.GetAnnotations()[render.AnnotationReleaseImageVersion]}
	in.Status, _, _ = unstructured.NestedFieldNoCopy(u.Object, "status")
	return jsonKey(in)
}

// jsonKey encodes v deterministically (encoding/json sorts map keys).
func jsonKey(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

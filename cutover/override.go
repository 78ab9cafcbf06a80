package cutover

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// ourOverride is the ClusterVersion override that makes the operator's
// Deployment unmanaged by the CVO, so that it stays scaled to zero.
func ourOverride() map[string]any {
	return map[string]any{"kind": "Deployment", "group": "apps", "namespace": Namespace, "name": Operator, "unmanaged": true}
}

// isOurs says whether an override entry names the operator's Deployment.
func isOurs(o any) bool {
	m, ok := o.(map[string]any)
	return ok && m["kind"] == "Deployment" && m["group"] == "apps" && m["namespace"] == Namespace && m["name"] == Operator
}

// overrides reads and patches the ClusterVersion's spec.overrides.
type overrides struct{ dyn dynamic.Interface }

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// plan finds the operator's entry in spec.overrides and the JSON
// patch that sets it: appended to the list (or the list made), or its
// unmanaged set true, never the list replaced. Every patch first tests
// the resourceVersion read, so an edit made meanwhile fails the patch
// rather than being lost.
func (ov overrides) plan(ctx context.Context, p *Plan) error {
	cv, err := ov.dyn.Resource(clusterVersions).Get(ctx, "version", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading ClusterVersion version (the cutover is for OpenShift): %w", err)
	}
	list, found, err := unstructured.NestedSlice(cv.Object, "spec", "overrides")
	if err != nil {
		return fmt.Errorf("ClusterVersion version: spec.overrides: %w", err)
	}
	p.OverrideIndex = -1
	for i, o := range list {
		if isOurs(o) {
			p.Override, p.OverrideIndex = o.(map[string]any), i
		}
	}
	p.OtherOverrides = len(list)
	if p.Override != nil {
		p.OtherOverrides--
	}
	test := patchOp{Op: "test", Path: "/metadata/resourceVersion", Value: cv.GetResourceVersion()}
	var ops []patchOp
	switch {
	case p.Override != nil && p.Override["unmanaged"] == true:
		return nil
	case p.Override != nil:
		ops = []patchOp{test, {Op: "test", Path: fmt.Sprintf("/spec/overrides/%d/name", p.OverrideIndex), Value: Operator},
			{Op: "replace", Path: fmt.Sprintf("/spec/overrides/%d/unmanaged", p.OverrideIndex), Value: true}}
	case found:
		ops = []patchOp{test, {Op: "add", Path: "/spec/overrides/-", Value: ourOverride()}}
	default:
		ops = []patchOp{test, {Op: "add", Path: "/spec/overrides", Value: []any{ourOverride()}}}
	}
	p.Patch, err = json.Marshal(ops)
	return err
}

// patch sends the plan's patch.
func (ov overrides) patch(ctx context.Context, p *Plan) error {
	if p.Patch == nil {
		return nil
	}
	_, err := ov.dyn.Resource(clusterVersions).Patch(ctx, "version", types.JSONPatchType, p.Patch, metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		return fmt.Errorf("ClusterVersion version: setting the override (it may have changed since it was read: run again): %w", err)
	}
	return nil
}

// remove removes the operator's entry from spec.overrides, and
// nothing else, when apply added it and it is as apply left it.
func (ov overrides) remove(ctx context.Context) (removed bool, err error) {
	cv, err := ov.dyn.Resource(clusterVersions).Get(ctx, "version", metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading ClusterVersion version: %w", err)
	}
	list, _, _ := unstructured.NestedSlice(cv.Object, "spec", "overrides")
	for i, o := range list {
		if !isOurs(o) || !reflect.DeepEqual(o, ourOverride()) {
			continue
		}
		path := fmt.Sprintf("/spec/overrides/%d", i)
		patch, err := json.Marshal([]patchOp{{Op: "test", Path: "/metadata/resourceVersion", Value: cv.GetResourceVersion()},
			{Op: "test", Path: path, Value: o}, {Op: "remove", Path: path}})
		if err != nil {
			return false, err
		}
		if _, err := ov.dyn.Resource(clusterVersions).Patch(ctx, "version", types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
			return false, fmt.Errorf("ClusterVersion version: removing the override (it may have changed since it was read: run again): %w", err)
		}
		return true, nil
	}
	return false, nil
}

package controller

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// gate holds what a pool's write must pass: the guards, which wait, and
// reconcilability, which refuses.
type gate struct {
	src    *kube.Source
	caches *guardCaches
	reconc reconcileCache
	log    *slog.Logger
}

// wait is why a pool is not rendered yet: what upstream's render controller
// waits for (pkg/apihelpers IsControllerConfigCompleted,
// AreMCGeneratingSubControllersCompletedForPool, OCPBUGS-3821). The pool
// keeps its configuration; it is rendered as soon as the object waited on
// changes.
type wait struct {
	Reason  string // the RenderPending condition's reason
	Message string // upstream's error text where it has one
}

func (w *wait) Error() string { return w.Reason + ": " + w.Message }

// The reasons a pool waits.
const (
	waitSelectingAll         = "SelectingAll"
	waitControllerConfig     = "ControllerConfigNotCompleted"
	waitKubeletConfig        = "KubeletConfigNotCompleted"
	waitContainerRuntime     = "ContainerRuntimeConfigNotCompleted"
	waitControllerVersions   = "ControllerVersionSkew"
	waitOSImageStream        = "OSImageStreamVersionSkew"
	conditionRenderPending   = "RenderPending"
	annotationControllerHash = render.AnnotationGeneratedByController
)

// guard returns why the pool must not be written now, or nil. res is its
// render (its inputs are res.MachineConfigs), nil when it failed.
func (g *gate) guard(pool *unstructured.Unstructured, res *render.Result) *wait {
	if sel, ok, _ := unstructured.NestedMap(pool.Object, "spec", "machineConfigSelector"); ok && len(sel) == 0 {
		return &wait{waitSelectingAll, "This machineconfigpool is selecting all machineconfigs. A non-empty selector is required."}
	}
	if w := controllerConfigCompleted(g.caches.controllerConfig()); w != nil {
		return w
	}
	if w := subControllersCompleted(kube.Objects(g.caches.runtime), kube.Objects(g.caches.kubelet), pool.GetLabels()); w != nil {
		return w
	}
	if w := g.sameControllerVersion(res); w != nil {
		return w
	}
	return osImageStreamCurrent(g.src.OSImageStreamObject(), g.controllerVersion(res))
}

// osImageStreamCurrent is upstream's guard on the OSImageStream
// (getOSImageStreamForPool): it supplies the pool's OS image apart from the
// ControllerConfig, so one written by another release's operator, mid
// upgrade, would pair a new OS image with old configuration. Upstream
// compares its release-image-version annotation with its own version, the
// one it stamps generated MachineConfigs with; mcs compares it with the
// version the pool's generated MachineConfigs carry (mine, "" when none
// does: then the annotation must only be there).
func osImageStreamCurrent(st *unstructured.Unstructured, mine string) *wait {
	if st == nil {
		return nil
	}
	v, ok := st.GetAnnotations()[render.AnnotationReleaseImageVersion]
	switch {
	case !ok:
		return &wait{waitOSImageStream, fmt.Sprintf("ignoring OSImageStream without %s annotation (my version: %s)", render.AnnotationReleaseImageVersion, mine)}
	case mine != "" && v != mine:
		return &wait{waitOSImageStream, fmt.Sprintf("ignoring OSImageStream with version %s (my version: %s)", v, mine)}
	}
	return nil
}

// controllerVersion is the generated-by-controller-version the pool's
// generated MachineConfigs carry ("" when none does, or not rendered).
func (g *gate) controllerVersion(res *render.Result) string {
	if res == nil {
		return ""
	}
	for _, name := range res.MachineConfigs {
		if mc := g.src.MachineConfig(name); mc != nil {
			if v := mc.GetAnnotations()[annotationControllerHash]; v != "" {
				return v
			}
		}
	}
	return ""
}

// controllerConfigCompleted is upstream's IsControllerConfigCompleted: the
// template controller has observed the ControllerConfig's generation and
// completed, and is neither running nor failing. With no ControllerConfig
// (a cluster without the MCO, rendered without release defaults as the
// servers do) there is nothing to wait for.
func controllerConfigCompleted(cc *unstructured.Unstructured) *wait {
	if cc == nil {
		return nil
	}
	observed, _, _ := unstructured.NestedInt64(cc.Object, "status", "observedGeneration")
	if cc.GetGeneration() != observed {
		return &wait{waitControllerConfig, fmt.Sprintf("status for ControllerConfig %s is being reported for %d, expecting it for %d", cc.GetName(), observed, cc.GetGeneration())}
	}
	conds, _, _ := unstructured.NestedSlice(cc.Object, "status", "conditions")
	completed := conditionTrue(conds, "TemplateControllerCompleted")
	running := conditionTrue(conds, "TemplateControllerRunning")
	failing := conditionTrue(conds, "TemplateControllerFailing")
	if completed && !running && !failing {
		return nil
	}
	return &wait{waitControllerConfig, fmt.Sprintf("ControllerConfig has not completed: completed(%v) running(%v) failing(%v)", completed, running, failing)}
}

// conditionTrue is whether the first condition of the type is True, as
// upstream's IsControllerConfigStatusConditionPresentAndEqual reads it.
func conditionTrue(conds []any, typ string) bool {
	c := findCondition(conds, typ)
	return c != nil && c["status"] == "True"
}

// findCondition is the first condition of the type in conds, or nil.
func findCondition(conds []any, typ string) map[string]any {
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// subControllersCompleted is upstream's
// AreMCGeneratingSubControllersCompletedForPool: every ContainerRuntimeConfig
// and KubeletConfig selecting the pool has been observed at its generation
// and its last condition says it succeeded. (Upstream indexes the last
// condition of a ContainerRuntimeConfig without checking there is one; one
// with none is waited for here.)
func subControllersCompleted(runtimes, kubelets []*unstructured.Unstructured, poolLabels map[string]string) *wait {
	for _, kind := range []struct {
		objs   []*unstructured.Unstructured
		name   string
		reason string
		ok     func(last map[string]any) bool
	}{
		{runtimes, "ContainerRuntimeConfig", waitContainerRuntime, func(last map[string]any) bool { return last["type"] == "Success" }},
		{kubelets, "KubeletConfig", waitKubeletConfig, func(last map[string]any) bool {
			return (last["type"] == "Accepted" && last["status"] == "True") || last["type"] == "Success"
		}},
	} {
		slices.SortFunc(kind.objs, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
		for _, o := range kind.objs {
			match, err := selects(o, poolLabels)
			if err != nil {
				return &wait{kind.reason, fmt.Sprintf("%s %s: invalid label selector: %v", kind.name, o.GetName(), err)}
			}
			if !match {
				continue
			}
			observed, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
			if o.GetGeneration() != observed {
				return &wait{kind.reason, fmt.Sprintf("status for %s %s is being reported for %d, expecting it for %d", kind.name, o.GetName(), observed, o.GetGeneration())}
			}
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			var last map[string]any
			if len(conds) > 0 {
				last, _ = conds[len(conds)-1].(map[string]any)
			}
			if last == nil || !kind.ok(last) {
				return &wait{kind.reason, fmt.Sprintf("%s has not completed (%s)", kind.name, o.GetName())}
			}
		}
	}
	return nil
}

// selects says whether o's spec.machineConfigPoolSelector matches the
// pool's labels (a missing selector matches nothing, as upstream's
// LabelSelectorAsSelector of nil does).
func selects(o *unstructured.Unstructured, poolLabels map[string]string) (bool, error) {
	raw, ok, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "machineConfigPoolSelector")
	if !ok || raw == nil {
		return false, nil
	}
	js, err := json.Marshal(raw)
	if err != nil {
		return false, err
	}
	var ls metav1.LabelSelector
	if err := json.Unmarshal(js, &ls); err != nil {
		return false, err
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return false, err
	}
	return sel.Matches(labels.Set(poolLabels)), nil
}

// sameControllerVersion waits while the pool's generated MachineConfigs
// carry different generated-by-controller-version annotations: a
// regeneration half done (OCPBUGS-3821). Upstream compares each with its
// own version; mcs has no release version of its own, so it waits until
// they agree.
func (g *gate) sameControllerVersion(res *render.Result) *wait {
	if res == nil {
		return nil // not rendered: the render's error says why
	}
	versions := map[string][]string{}
	for _, name := range res.MachineConfigs {
		mc := g.src.MachineConfig(name)
		if mc == nil {
			continue
		}
		if v := mc.GetAnnotations()[annotationControllerHash]; v != "" {
			versions[v] = append(versions[v], name)
		}
	}
	if len(versions) < 2 {
		return nil
	}
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(versions)) {
		parts = append(parts, fmt.Sprintf("%s (%s)", v, strings.Join(versions[v], ", ")))
	}
	return &wait{waitControllerVersions, "ignoring MachineConfigs generated by different controller versions, a regeneration under way: " + strings.Join(parts, "; ")}
}

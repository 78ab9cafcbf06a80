package controller

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

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
	if spec, err := typed[mcfgv1.MachineConfigPoolSpec](pool, "spec"); err == nil && selectsAll(spec.MachineConfigSelector) {
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
	st, err := typed[mcfgv1.ControllerConfigStatus](cc, "status")
	if err != nil {
		return &wait{waitControllerConfig, fmt.Sprintf("status of ControllerConfig %s: %v", cc.GetName(), err)}
	}
	if cc.GetGeneration() != st.ObservedGeneration {
		return &wait{waitControllerConfig, fmt.Sprintf("status for ControllerConfig %s is being reported for %d, expecting it for %d", cc.GetName(), st.ObservedGeneration, cc.GetGeneration())}
	}
	// The first condition of each type, as upstream's
	// IsControllerConfigStatusConditionPresentAndEqual reads them.
	isTrue := func(typ mcfgv1.ControllerConfigStatusConditionType) bool {
		i := slices.IndexFunc(st.Conditions, func(c mcfgv1.ControllerConfigStatusCondition) bool { return c.Type == typ })
		return i >= 0 && st.Conditions[i].Status == corev1.ConditionTrue
	}
	completed := isTrue(mcfgv1.TemplateControllerCompleted)
	running := isTrue(mcfgv1.TemplateControllerRunning)
	failing := isTrue(mcfgv1.TemplateControllerFailing)
	if completed && !running && !failing {
		return nil
	}
	return &wait{waitControllerConfig, fmt.Sprintf("ControllerConfig has not completed: completed(%v) running(%v) failing(%v)", completed, running, failing)}
}

// typed decodes o's field (spec, status) into T, one of openshift/api's
// types; a field o has not is T's zero value.
func typed[T any](o *unstructured.Unstructured, field string) (T, error) {
	var out T
	m, ok := o.Object[field].(map[string]any)
	if !ok {
		return out, nil
	}
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &out)
	return out, err
}

// selectsAll is whether a selector is given and empty: it selects every
// MachineConfig (upstream's SelectingAll guard).
func selectsAll(sel *metav1.LabelSelector) bool {
	return sel != nil && len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0
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
		read   func(o *unstructured.Unstructured) (subStatus, error)
	}{
		{runtimes, "ContainerRuntimeConfig", waitContainerRuntime, runtimeStatus},
		{kubelets, "KubeletConfig", waitKubeletConfig, kubeletStatus},
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
			st, err := kind.read(o)
			if err != nil {
				return &wait{kind.reason, fmt.Sprintf("status of %s %s: %v", kind.name, o.GetName(), err)}
			}
			if o.GetGeneration() != st.observed {
				return &wait{kind.reason, fmt.Sprintf("status for %s %s is being reported for %d, expecting it for %d", kind.name, o.GetName(), st.observed, o.GetGeneration())}
			}
			if !st.succeeded {
				return &wait{kind.reason, fmt.Sprintf("%s has not completed (%s)", kind.name, o.GetName())}
			}
		}
	}
	return nil
}

// subStatus is what the guard reads of a sub-controller's status: the
// generation it observed, and whether its last condition says it
// succeeded.
type subStatus struct {
	observed  int64
	succeeded bool
}

func runtimeStatus(o *unstructured.Unstructured) (subStatus, error) {
	st, err := typed[mcfgv1.ContainerRuntimeConfigStatus](o, "status")
	out := subStatus{observed: st.ObservedGeneration}
	if n := len(st.Conditions); n > 0 {
		out.succeeded = st.Conditions[n-1].Type == mcfgv1.ContainerRuntimeConfigSuccess
	}
	return out, err
}

func kubeletStatus(o *unstructured.Unstructured) (subStatus, error) {
	st, err := typed[mcfgv1.KubeletConfigStatus](o, "status")
	out := subStatus{observed: st.ObservedGeneration}
	if n := len(st.Conditions); n > 0 {
		last := st.Conditions[n-1]
		out.succeeded = last.Type == mcfgv1.KubeletConfigSuccess || (last.Type == mcfgv1.KubeletConfigAccepted && last.Status == corev1.ConditionTrue)
	}
	return out, err
}

// selects says whether o's spec.machineConfigPoolSelector matches the
// pool's labels (a missing selector matches nothing, as upstream's
// LabelSelectorAsSelector of nil does).
func selects(o *unstructured.Unstructured, poolLabels map[string]string) (bool, error) {
	spec, err := typed[struct {
		MachineConfigPoolSelector *metav1.LabelSelector `json:"machineConfigPoolSelector"`
	}](o, "spec")
	if err != nil || spec.MachineConfigPoolSelector == nil {
		return false, err
	}
	sel, err := metav1.LabelSelectorAsSelector(spec.MachineConfigPoolSelector)
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

package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The ControllerConfig guard as upstream's IsControllerConfigCompleted.
func TestControllerConfigCompleted(t *testing.T) {
	cond := func(typ, status string) any { return map[string]any{"type": typ, "status": status} }
	for _, tc := range []struct {
		name       string
		generation int64
		status     map[string]any
		want       string // "" completed
	}{
		{"completed", 2, map[string]any{"observedGeneration": int64(2), "conditions": []any{cond("TemplateControllerCompleted", "True")}}, ""},
		{"not observed", 2, map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("TemplateControllerCompleted", "True")}}, "status for ControllerConfig machine-config-controller is being reported for 1, expecting it for 2"},
		{"running", 1, map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("TemplateControllerCompleted", "True"), cond("TemplateControllerRunning", "True")}}, "completed(true) running(true) failing(false)"},
		{"failing", 1, map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("TemplateControllerCompleted", "True"), cond("TemplateControllerFailing", "True")}}, "completed(true) running(false) failing(true)"},
		{"no conditions", 1, map[string]any{"observedGeneration": int64(1)}, "completed(false) running(false) failing(false)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := &unstructured.Unstructured{Object: map[string]any{"status": tc.status}}
			cc.SetName("machine-config-controller")
			cc.SetGeneration(tc.generation)
			w := controllerConfigCompleted(cc)
			switch {
			case tc.want == "" && w != nil:
				t.Fatalf("waits: %v", w)
			case tc.want != "" && (w == nil || !strings.Contains(w.Message, tc.want) || w.Reason != waitControllerConfig):
				t.Fatalf("got %v, want %q", w, tc.want)
			}
		})
	}
	if controllerConfigCompleted(nil) != nil {
		t.Error("no ControllerConfig waits")
	}
}

// The sub-controller guard as upstream's
// AreMCGeneratingSubControllersCompletedForPool.
func TestSubControllersCompleted(t *testing.T) {
	obj := func(name string, gen, observed int64, sel map[string]any, conds ...any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"machineConfigPoolSelector": sel},
			"status": map[string]any{"observedGeneration": observed, "conditions": conds}}}
		u.SetName(name)
		u.SetGeneration(gen)
		return u
	}
	worker := map[string]any{"matchLabels": map[string]any{"pools.operator.machineconfiguration.openshift.io/worker": ""}}
	infra := map[string]any{"matchLabels": map[string]any{"pools.operator.machineconfiguration.openshift.io/infra": ""}}
	ok := map[string]any{"type": "Success", "status": "True"}
	accepted := map[string]any{"type": "Accepted", "status": "True"}
	failed := map[string]any{"type": "Failure", "status": "True"}
	labels := map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""}
	for _, tc := range []struct {
		name               string
		runtimes, kubelets []*unstructured.Unstructured
		want               string
	}{
		{"none", nil, nil, ""},
		{"succeeded", []*unstructured.Unstructured{obj("r", 1, 1, worker, failed, ok)}, []*unstructured.Unstructured{obj("k", 2, 2, worker, accepted)}, ""},
		{"another pool's, not observed", nil, []*unstructured.Unstructured{obj("k", 2, 1, infra)}, ""},
		{"kubelet not observed", nil, []*unstructured.Unstructured{obj("k", 2, 1, worker, ok)}, "status for KubeletConfig k is being reported for 1, expecting it for 2"},
		{"kubelet failed", nil, []*unstructured.Unstructured{obj("k", 1, 1, worker, failed)}, "KubeletConfig has not completed (k)"},
		{"kubelet without conditions", nil, []*unstructured.Unstructured{obj("k", 1, 1, worker)}, "KubeletConfig has not completed (k)"},
		{"runtime last condition failed", []*unstructured.Unstructured{obj("r", 1, 1, worker, ok, failed)}, nil, "ContainerRuntimeConfig has not completed (r)"},
		{"runtime without conditions (upstream panics)", []*unstructured.Unstructured{obj("r", 1, 1, worker)}, nil, "ContainerRuntimeConfig has not completed (r)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := subControllersCompleted(tc.runtimes, tc.kubelets, labels)
			switch {
			case tc.want == "" && w != nil:
				t.Fatalf("waits: %v", w)
			case tc.want != "" && (w == nil || !strings.Contains(w.Message, tc.want)):
				t.Fatalf("got %v, want %q", w, tc.want)
			}
		})
	}
}

// Upstream's TestGetOSImageStreamVersionGuard: an OSImageStream written for
// another controller version, or without the annotation, is waited for.
func TestOSImageStreamCurrent(t *testing.T) {
	stream := func(annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetName("cluster")
		u.SetAnnotations(annotations)
		return u
	}
	const key = "machineconfiguration.openshift.io/release-image-version"
	for _, tc := range []struct {
		name   string
		stream *unstructured.Unstructured
		mine   string
		want   string // "" renders
	}{
		{"matching version returns stream set", stream(map[string]string{key: "abc"}), "abc", ""},
		{"mismatched version returns error", stream(map[string]string{key: "abc-other"}), "abc", "ignoring OSImageStream with version abc-other (my version: abc)"},
		{"missing annotation returns error", stream(nil), "abc", "ignoring OSImageStream without " + key + " annotation (my version: abc)"},
		{"no generated MachineConfig to compare with", stream(map[string]string{key: "abc"}), "", ""},
		{"no OSImageStream", nil, "abc", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := osImageStreamCurrent(tc.stream, tc.mine)
			switch {
			case tc.want == "" && w != nil:
				t.Fatalf("waits: %v", w)
			case tc.want != "" && (w == nil || w.Message != tc.want || w.Reason != waitOSImageStream):
				t.Fatalf("got %v, want %s: %q", w, waitOSImageStream, tc.want)
			}
		})
	}
}

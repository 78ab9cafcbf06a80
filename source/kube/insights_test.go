package kube

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Against the real kube-apiserver: without the HealthInsight resource
// nothing is written and nothing fails; with a CRD in the #2233 shape the
// insights are created, updated (startedAt kept) and removed with their
// conditions, and others' insights are left alone.
func TestHealthInsights(t *testing.T) {
	cp := needControlPlane(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	w, err := NewInsightWriter(cp.admin, "mcs", func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	skew := HealthInsight{Name: "mcs-boot-image-skew-refused-worker", Pools: []string{"worker"}, Level: "Warning", Type: "Cluster Capacity",
		Summary: "Nodes of pool worker were refused.", Description: "d", Reference: "https://example.com/docs/alerts.md#a"}
	if served, err := w.Sync(ctx, []HealthInsight{skew}); served || err != nil {
		t.Fatalf("without the resource: served %v, %v", served, err)
	}

	cp.ApplyFiles(t, "testdata/healthinsights.crd.yaml")
	t.Cleanup(func() {
		_ = cp.dyn.Resource(crds).Delete(context.Background(), "healthinsights.update.openshift.io", metav1.DeleteOptions{})
	})
	eventually(t, 30*time.Second, "the HealthInsight resource served", func() error {
		served, err := w.Sync(ctx, []HealthInsight{skew})
		if err == nil && !served {
			err = apierrors.NewNotFound(healthInsights.GroupResource(), "discovery")
		}
		return err
	})
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "update.openshift.io/v1alpha1", "kind": "HealthInsight",
		"metadata": map[string]any{"name": "someone-elses"}, "spec": map[string]any{}}}
	if _, err := cp.dyn.Resource(healthInsights).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := insight(t, cp, skew.Name)
	want := map[string]any{"startedAt": "2026-11-27T03:00:00Z",
		"scope":       map[string]any{"type": "WorkerPool", "resources": []any{map[string]any{"group": "machineconfiguration.openshift.io", "resource": "machineconfigpools", "name": "worker"}}},
		"impact":      map[string]any{"level": "Warning", "type": "Cluster Capacity", "summary": "Nodes of pool worker were refused.", "description": "d"},
		"remediation": map[string]any{"reference": "https://example.com/docs/alerts.md#a"}}
	if st := got.Object["status"]; !equalJSON(st, want) {
		t.Errorf("status %v, want %v", st, want)
	}

	now = now.Add(time.Hour)
	skew.Summary = "Nodes of pool worker were refused again."
	render := HealthInsight{Name: "mcs-render-failing", Pools: []string{"master"}, Level: "Warning", Type: "Update Stalled", Summary: "s", Reference: "https://example.com/r"}
	if _, err := w.Sync(ctx, []HealthInsight{skew, render}); err != nil {
		t.Fatal(err)
	}
	got = insight(t, cp, skew.Name)
	if s, _, _ := unstructured.NestedString(got.Object, "status", "impact", "summary"); s != skew.Summary {
		t.Errorf("summary not updated: %q", s)
	}
	if s, _, _ := unstructured.NestedString(got.Object, "status", "startedAt"); s != "2026-11-27T03:00:00Z" {
		t.Errorf("startedAt %q: an update must keep when the condition began", s)
	}
	if s, _, _ := unstructured.NestedString(insight(t, cp, render.Name).Object, "status", "scope", "type"); s != "ControlPlane" {
		t.Errorf("the master pool's scope %q", s)
	}

	if _, err := w.Sync(ctx, []HealthInsight{render}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.dyn.Resource(healthInsights).Get(ctx, skew.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a cleared condition's insight: %v, want it removed", err)
	}
	insight(t, cp, "someone-elses")
}

func insight(t *testing.T, cp *controlPlane, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := cp.dyn.Resource(healthInsights).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func equalJSON(a, b any) bool { return jsonKey(a) == jsonKey(b) }

package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// TestRenderApplyLoopNoOp is OpenShift's render controller re-applying its
// rendered config on every pool sync, as lib/resourceapply.ApplyMachineConfig
// does: GET, compare spec.config with its own 3.5.0 bytes (they differ:
// what is stored is lower), Update with them. The webhook lowers them to
// what is stored, so the API server writes nothing: the resourceVersion
// stays, and a watch sees no event before a later sentinel write's.
func TestRenderApplyLoopNoOp(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	var rendered *unstructured.Unstructured
	for _, o := range realdataObjects(t, "aws") {
		if strings.HasPrefix(o.GetName(), "rendered-worker-") {
			rendered = o
		}
	}
	generated := configOf(rendered) // the controller's own 3.5.0 bytes
	res := s.cp.Dynamic.Resource(machineConfigs)
	created, err := res.Create(ctx, rendered, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Delete(context.Background(), created.GetName(), metav1.DeleteOptions{}) })
	if v := storedVersion(created); v != "3.0.0" {
		t.Fatalf("created at %s, want 3.0.0", v)
	}
	rv := created.GetResourceVersion()
	w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, FieldSelector: "metadata.name=" + created.GetName()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	const syncs = 5
	for i := range syncs {
		existing, err := res.Get(ctx, created.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(configOf(existing), generated) {
			t.Fatalf("sync %d: stored config equals the generated one: the controller would not update", i)
		}
		var cfg map[string]any
		if err := json.Unmarshal(generated, &cfg); err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(existing.Object, cfg, "spec", "config"); err != nil {
			t.Fatal(err)
		}
		updated, err := res.Update(ctx, existing, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
		if updated.GetResourceVersion() != rv {
			t.Fatalf("sync %d: resourceVersion %s → %s: the re-apply was written", i, rv, updated.GetResourceVersion())
		}
	}
	// The sentinel: a real change, whose event must be the first the watch
	// delivers.
	existing, err := res.Get(ctx, created.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	existing.SetLabels(map[string]string{"sentinel": "1"})
	sentinel, err := res.Update(ctx, existing, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		o, _ := ev.Object.(*unstructured.Unstructured)
		if ev.Type != watch.Modified || o == nil || o.GetResourceVersion() != sentinel.GetResourceVersion() {
			t.Fatalf("first event after %d re-applies: %s %v, want the sentinel's (resourceVersion %s)", syncs, ev.Type, o, sentinel.GetResourceVersion())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event for the sentinel write")
	}
}

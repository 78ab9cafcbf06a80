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
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// applier re-applies a MachineConfig as lib/resourceapply.ApplyMachineConfig
// does: GET, compare spec.config with its own bytes, Update with them when
// they differ. It returns the resourceVersion after.
type applier struct {
	res       dynamic.ResourceInterface
	generated []byte
}

func (a applier) apply(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	existing, err := a.res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(configOf(existing), a.generated) {
		t.Fatal("stored config equals the generated one: the controller would not update")
	}
	var cfg map[string]any
	if err := json.Unmarshal(a.generated, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(existing.Object, cfg, "spec", "config"); err != nil {
		t.Fatal(err)
	}
	updated, err := a.res.Update(ctx, existing, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if storedVersion(updated) != "3.0.0" {
		t.Fatalf("stored at %s after a re-apply", storedVersion(updated))
	}
	return updated.GetResourceVersion()
}

// TestRenderApplyLoopNoOp is OpenShift's render controller re-applying its
// rendered config (3.5.0) on every pool sync. The webhook lowers the bytes
// to what is stored, and restores the managedFields the API server stamped
// with a new time before admission, so the API server writes nothing: the
// resourceVersion stays, and a watch sees no event before a later
// sentinel write's. So for the manager that created it and for another
// (a config `mcs admit lower-existing` re-stored, say). The re-applies go on
// for two seconds at least: managedFields times have whole seconds.
func TestRenderApplyLoopNoOp(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	var rendered *unstructured.Unstructured
	for _, o := range realdataObjects(t, "aws") {
		if strings.HasPrefix(o.GetName(), "rendered-worker-") {
			rendered = o
		}
	}
	rc := rest.CopyConfig(s.cp.Admin)
	rc.UserAgent = "machine-config-controller/v0.0.0 (linux/amd64) kubernetes/$Format/machine-config-controller"
	controller := applier{res: dynamic.NewForConfigOrDie(rc).Resource(machineConfigs), generated: configOf(rendered)}
	other := applier{res: s.cp.Dynamic.Resource(machineConfigs), generated: controller.generated}
	created, err := controller.res.Create(ctx, rendered, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := created.GetName()
	t.Cleanup(func() { _ = other.res.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if v := storedVersion(created); v != "3.0.0" {
		t.Fatalf("created at %s, want 3.0.0", v)
	}
	rv := created.GetResourceVersion()
	w, err := other.res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	start, syncs := time.Now(), 0
	for ; syncs < 10 || time.Since(start) < 2*time.Second; syncs++ {
		a := controller
		if syncs%2 == 1 {
			a = other
		}
		if got := a.apply(t, name); got != rv {
			t.Fatalf("re-apply %d after %s: resourceVersion %s → %s: it was written", syncs, time.Since(start).Round(time.Millisecond), rv, got)
		}
	}
	firstEventIsSentinel(t, other.res, w, name, syncs)
}

// firstEventIsSentinel writes a real change to name (a label) and checks
// that its event is the first w sees: the re-applies before it wrote
// nothing.
func firstEventIsSentinel(t *testing.T, res dynamic.ResourceInterface, w watch.Interface, name string, reapplies int) {
	t.Helper()
	ctx := context.Background()
	existing, err := res.Get(ctx, name, metav1.GetOptions{})
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
			t.Fatalf("first event after %d re-applies: %s %v, want the sentinel's (resourceVersion %s)", reapplies, ev.Type, o, sentinel.GetResourceVersion())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event for the sentinel write")
	}
}

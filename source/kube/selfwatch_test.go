package kube

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// TestSelfWatchWhole: the metadata watch's events become the objects the
// self-mode cache holds: a rendered config as metadata, any other
// MachineConfig whole, read at its event's resourceVersion or not at all.
func TestSelfWatchWhole(t *testing.T) {
	stored := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": "50-user", "resourceVersion": "7",
			"labels": map[string]any{"machineconfiguration.openshift.io/role": "worker"}},
		"spec": map[string]any{"config": map[string]any{"ignition": map[string]any{"version": "3.2.0"}}},
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{MachineConfigs: "MachineConfigList"}, stored)
	l := &selfMachineConfigs{full: client.Resource(MachineConfigs)}
	yes := true
	meta := func(name, rv string, labelled bool) *metav1.PartialObjectMetadata {
		pm := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
		if labelled {
			pm.Labels = map[string]string{"machineconfiguration.openshift.io/role": "worker"}
		} else {
			pm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "machineconfiguration.openshift.io/v1",
				Kind: "MachineConfigPool", Name: "worker", UID: "u", Controller: &yes}}
		}
		return pm
	}
	for _, tc := range []struct {
		name      string
		ev        watch.Event
		pass      bool
		wholeSpec bool
	}{
		{"rendered config: metadata only", watch.Event{Type: watch.Added, Object: meta("rendered-worker-1", "9", false)}, true, false},
		{"input at its version: whole", watch.Event{Type: watch.Modified, Object: meta("50-user", "7", true)}, true, true},
		{"input changed since: dropped", watch.Event{Type: watch.Modified, Object: meta("50-user", "6", true)}, false, false},
		{"input gone since: dropped", watch.Event{Type: watch.Added, Object: meta("60-gone", "3", true)}, false, false},
		{"deletion: metadata", watch.Event{Type: watch.Deleted, Object: meta("50-user", "8", true)}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, pass := metadataEvent(tc.ev), true
			if needsWhole(ev) {
				ev, pass = l.readOne(context.Background(), ev)
			}
			if pass != tc.pass {
				t.Fatalf("passed %v, want %v", pass, tc.pass)
			}
			if !pass {
				return
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type != tc.ev.Type {
				t.Fatalf("got %s %T", ev.Type, ev.Object)
			}
			if u.GetKind() != "MachineConfig" || u.GetName() != tc.ev.Object.(*metav1.PartialObjectMetadata).Name {
				t.Errorf("got %s/%s", u.GetKind(), u.GetName())
			}
			if _, has := u.Object["spec"]; has != tc.wholeSpec {
				t.Errorf("spec present %v, want %v", has, tc.wholeSpec)
			}
		})
	}
}

// A watch stopped with an event in hand ends: its channel closes, and no
// goroutine waits for a reader that is gone.
func TestWholeWatchStops(t *testing.T) {
	in := watch.NewFake()
	l := &selfMachineConfigs{backlog: &backlog{now: time.Now}}
	w := l.newWholeWatch(context.Background(), in)
	in.Delete(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x"}}) // returns once read
	w.Stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, open := <-w.ResultChan():
			if !open {
				return
			}
		case <-deadline:
			t.Fatal("the watch did not end once stopped")
		}
	}
}

// A backlog of bulk changes or more is read with one LIST, no GET: each
// object listed at its event's version passes whole, one changed or gone
// since is dropped, events keep their order, and an object changed twice
// while waiting passes once, at its newest version.
func TestBacklogReadInBulk(t *testing.T) {
	obj := func(name, rv string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
			"metadata": map[string]any{"name": name, "resourceVersion": rv, "labels": map[string]any{roleLabel: "worker"}},
			"spec":     map[string]any{"config": map[string]any{"ignition": map[string]any{"version": "3.2.0"}}},
		}}
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{MachineConfigs: "MachineConfigList"}, obj("a", "7"), obj("b", "5"))
	var shown []int
	bl := &backlog{now: time.Now, gauge: func(v float64) { shown = append(shown, int(v)) }}
	l := &selfMachineConfigs{full: client.Resource(MachineConfigs), bulk: 3, backlog: bl}
	meta := func(name, rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv, Labels: map[string]string{roleLabel: "worker"}}}
	}
	p := &pending{wake: make(chan struct{}, 1)}
	for _, ev := range []watch.Event{
		{Type: watch.Added, Object: meta("a", "6")},
		{Type: watch.Added, Object: meta("c", "3")}, // gone since: not listed
		{Type: watch.Modified, Object: meta("a", "7")},
		{Type: watch.Deleted, Object: meta("d", "8")},
		{Type: watch.Added, Object: meta("b", "5")},
	} {
		p.add(metadataEvent(ev))
	}
	p.done = true
	out := make(chan watch.Event, 10)
	l.pass(context.Background(), p, out)
	close(out)
	var got []string
	for ev := range out {
		u := ev.Object.(*unstructured.Unstructured)
		_, whole := u.Object["spec"]
		got = append(got, fmt.Sprintf("%s %s@%s whole=%v", ev.Type, u.GetName(), u.GetResourceVersion(), whole))
	}
	want := []string{"MODIFIED a@7 whole=true", "DELETED d@8 whole=false", "ADDED b@5 whole=true"}
	if !slices.Equal(got, want) {
		t.Errorf("passed %q, want %q", got, want)
	}
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	if !slices.Equal(verbs, []string{"list"}) {
		t.Errorf("requests %v, want one list", verbs)
	}
	if len(shown) == 0 || shown[0] != 4 || shown[len(shown)-1] != 0 {
		t.Errorf("backlog shown %v, want 4 (a, c, d, b) then 0", shown)
	}
}

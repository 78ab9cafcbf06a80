package kube

import (
	"context"
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
			ev, pass := l.whole(context.Background(), tc.ev)
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
	inHand := make(chan struct{})
	w := newWholeWatch(context.Background(), in, func(_ context.Context, ev watch.Event) (watch.Event, bool) {
		close(inHand)
		return ev, true
	})
	go in.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x"}})
	<-inHand
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

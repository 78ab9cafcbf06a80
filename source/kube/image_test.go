package kube

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// An image-mode pool's image is served only as upstream's
// resolveDesiredImageForPool serves it; each case takes one condition away.
func TestDesiredImage(t *testing.T) {
	const img = "quay.example.com/os@sha256:abc"
	mosc := func(pool, image string) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": "m-" + pool}, "spec": map[string]any{"machineConfigPool": map[string]any{"name": pool}},
			"status": map[string]any{"currentImagePullSpec": image}}
	}
	mosb := func(name, mc, status string) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": name}, "spec": map[string]any{"machineOSConfig": map[string]any{"name": "m-worker"},
			"machineConfig": map[string]any{"name": mc}}, "status": map[string]any{"conditions": []any{map[string]any{"type": "Succeeded", "status": status}}}}
	}
	pool := func(updated int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "worker"}, "status": map[string]any{"updatedMachineCount": updated}}}
	}
	for _, tc := range []struct {
		name         string
		moscs, mosbs []map[string]any
		routes       []map[string]any
		updated      int64
		image, why   string
	}{
		{"served", []map[string]any{mosc("worker", img)}, []map[string]any{mosb("a", "rendered-1", "False"), mosb("b", "rendered-1", "True")}, nil, 1, img, ""},
		{"no MachineOSConfig", []map[string]any{mosc("infra", img)}, nil, nil, 1, "", "no MachineOSConfig names the pool"},
		{"no image yet", []map[string]any{mosc("worker", "")}, nil, nil, 1, "", "has no image"},
		{"no build of the config", []map[string]any{mosc("worker", img)}, []map[string]any{mosb("a", "rendered-0", "True")}, nil, 1, "", "no MachineOSBuild"},
		{"build not done", []map[string]any{mosc("worker", img)}, []map[string]any{mosb("a", "rendered-1", "False")}, nil, 1, "", "has not succeeded"},
		{"no machine updated", []map[string]any{mosc("worker", img)}, []map[string]any{mosb("a", "rendered-1", "True")}, nil, 0, "", "updatedMachineCount is 0"},
		{"in-cluster registry", []map[string]any{mosc("worker", "image-registry.openshift-image-registry.svc:5000/ns/os@sha256:abc")},
			[]map[string]any{mosb("a", "rendered-1", "True")}, nil, 1, "", "cluster's own registry"},
		{"behind the registry's route", []map[string]any{mosc("worker", "default-route.apps.example.com/ns/os@sha256:abc")},
			[]map[string]any{mosb("a", "rendered-1", "True")}, []map[string]any{{"metadata": map[string]any{"name": "r"}, "spec": map[string]any{"host": "default-route.apps.example.com"}}}, 1, "", "cluster's own registry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &caches{synced: make(chan struct{}), moscs: store(t, tc.moscs), mosbs: store(t, tc.mosbs), routes: store(t, tc.routes)}
			close(c.synced)
			image, why := c.desiredImage(pool(tc.updated), "rendered-1")
			if image != tc.image || !strings.Contains(why, tc.why) {
				t.Errorf("got %q, %q; want %q, %q", image, why, tc.image, tc.why)
			}
		})
	}
	if image, why := (&caches{}).desiredImage(pool(1), "rendered-1"); image != "" || why == "" {
		t.Errorf("without the resources: %q %q", image, why)
	}
}

func store(t *testing.T, objs []map[string]any) cache.Store {
	st := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, o := range objs {
		if err := st.Add(&unstructured.Unstructured{Object: o}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

func TestRenderedPool(t *testing.T) {
	yes, no := true, false
	gen := map[string]string{render.AnnotationGeneratedByController: "v"}
	owner := func(kind string, controller *bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: kind, Name: "infra-x", Controller: controller}}
	}
	for _, tc := range []struct {
		name   string
		meta   metav1.ObjectMeta
		pool   string
		isRend bool
	}{
		{"owned by a pool", metav1.ObjectMeta{Name: "anything", Annotations: gen, OwnerReferences: owner("MachineConfigPool", &yes)}, "infra-x", true},
		{"rendered name", metav1.ObjectMeta{Name: "rendered-infra-x-0123456789abcdef0123456789abcdef", Annotations: gen}, "infra-x", true},
		{"a pool owns it, not as controller", metav1.ObjectMeta{Name: "x", Annotations: gen, OwnerReferences: owner("MachineConfigPool", &no)}, "", false},
		{"generated config of a ControllerConfig", metav1.ObjectMeta{Name: "00-worker", Annotations: gen, OwnerReferences: owner("ControllerConfig", &yes)}, "", false},
		{"a user's config named like one, not generated", metav1.ObjectMeta{Name: "rendered-worker-0123456789abcdef0123456789abcdef"}, "", false},
		{"short hash", metav1.ObjectMeta{Name: "rendered-worker-0123", Annotations: gen}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, ok := renderedPool(&metav1.PartialObjectMetadata{ObjectMeta: tc.meta})
			if pool != tc.pool || ok != tc.isRend {
				t.Errorf("got %q %v, want %q %v", pool, ok, tc.pool, tc.isRend)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// w0..w5 for worker (w5 newest; w1 and w2 created in the same second,
	// told apart by resourceVersion), m0..m1 for master.
	inv := func() *inventory {
		mk := func(name, pool string, sec, rv int, inUse ...string) *RenderedConfig {
			return &RenderedConfig{Name: name, Pool: pool, Created: at.Add(time.Duration(sec) * time.Second), ResourceVersion: fmt.Sprint(rv), InUse: inUse}
		}
		i := &inventory{Configs: []*RenderedConfig{
			mk("w0", "worker", 0, 1, "node a currentConfig"), mk("w1", "worker", 1, 2), mk("w2", "worker", 1, 3),
			mk("w3", "worker", 2, 4), mk("w4", "worker", 3, 5), mk("w5", "worker", 4, 6, "pool worker spec"),
			mk("m0", "master", 0, 7), mk("m1", "master", 1, 8, "pool master spec"),
		}, Pools: []string{"master", "worker"}}
		slices.SortFunc(i.Configs, newestFirst)
		return i
	}
	names := func(rs []*RenderedConfig) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		keep, count int
		pool        string
		want        []string // oldest first
	}{
		{"keep none", 0, 0, "", []string{"m0", "w1", "w2", "w3", "w4"}},
		{"keep one per pool", 1, 0, "", []string{"w1", "w2", "w3"}},
		{"keep two: same-second ties by resourceVersion", 2, 0, "", []string{"w1", "w2"}},
		{"keep more than there are", 10, 0, "", nil},
		{"one pool", 0, 0, "master", []string{"m0"}},
		{"count bounds to the oldest", 0, 2, "", []string{"m0", "w1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := inv()
			got := names(i.Plan(tc.keep, tc.pool, tc.count))
			if !slices.Equal(got, tc.want) {
				t.Errorf("plan %v, want %v", got, tc.want)
			}
			for _, r := range i.Configs {
				if len(r.InUse) > 0 && slices.Contains(got, r.Name) {
					t.Errorf("%s in use, planned for deletion", r.Name)
				}
			}
		})
	}
}

// Nodes annotated on old configs, a pool whose status lags its spec:
// pruning keeps exactly those in use plus the K newest, and the dry run
// names the very set the confirmed run deletes. Then the controller's own
// pruning, with a smaller K.
func TestRetention(t *testing.T) {
	cp := needControlPlane(t)
	ctx := context.Background()
	cp.Apply(t, poolObject(t, "worker"), mcObject(t, "50-worker", "worker", "v0"))
	c := startController(t, cp, Config{ReleaseOnCancel: true})
	var names []string // oldest first
	for i := range 8 {
		cp.Apply(t, mcObject(t, "50-worker", "worker", fmt.Sprintf("v%d", i)))
		kubetest.Eventually(t, 20*time.Second, fmt.Sprintf("config v%d", i), func() error {
			n := configuration(pool(t, cp, "worker"))
			if n == "" || slices.Contains(names, n) {
				return fmt.Errorf("pool names %q", n)
			}
			names = append(names, n)
			return nil
		})
	}
	c.stop()
	cp.Apply(t, nodeObject("n1", map[string]string{annotationCurrentConfig: names[0], annotationDesiredConfig: names[0]}),
		nodeObject("n2", map[string]string{annotationCurrentConfig: names[0], annotationDesiredConfig: names[1]}))
	if _, err := cp.Dynamic.Resource(kube.MachineConfigPools).Patch(ctx, "worker", types.MergePatchType,
		[]byte(`{"status":{"configuration":{"name":"`+names[2]+`"}}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	meta, err := metadata.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}

	checkPruneList(t, cp, meta, names)

	// A mistyped --pool-name prunes nothing and says which pool was meant.
	if _, err := Prune(ctx, cp.Dynamic, meta, PruneOptions{Pool: "Worker", Confirm: true}); err == nil ||
		!strings.Contains(err.Error(), `unknown pool "Worker" (did you mean worker?)`) {
		t.Errorf("--pool-name Worker: %v", err)
	}
	dry, err := Prune(ctx, cp.Dynamic, meta, PruneOptions{Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(renderedConfigs(t, cp, "worker")); got != 8 {
		t.Fatalf("the dry run deleted: %d left", got)
	}
	real, err := Prune(ctx, cp.Dynamic, meta, PruneOptions{Keep: 2, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{names[3], names[4]}
	slices.Sort(want)
	if d, r := slices.Sorted(slices.Values(dry.Deleted)), slices.Sorted(slices.Values(real.Deleted)); !slices.Equal(d, want) || !slices.Equal(r, want) {
		t.Errorf("dry run listed %v, the confirmed run deleted %v; want %v", d, r, want)
	}
	if real.InUse != 4 || real.Kept != 2 {
		t.Errorf("%d in use, %d kept; want 4 and 2", real.InUse, real.Kept)
	}
	left := slices.Sorted(maps.Keys(renderedConfigs(t, cp, "worker")))
	keep := []string{names[0], names[1], names[2], names[5], names[6], names[7]}
	slices.Sort(keep)
	if !slices.Equal(left, keep) {
		t.Errorf("left %v, want in use (0, 1, 2, 7) and the 2 newest others (5, 6): %v", left, keep)
	}

	// The controller, pruning with K = 0: only what is in use is left.
	pc := startController(t, cp, Config{Prune: true, Keep: 0, PruneGrace: time.Millisecond})
	kubetest.Eventually(t, 20*time.Second, "the controller prunes", func() error {
		left := slices.Sorted(maps.Keys(renderedConfigs(t, cp, "worker")))
		want := []string{names[0], names[1], names[2], names[7]}
		slices.Sort(want)
		if !slices.Equal(left, want) {
			return fmt.Errorf("left %v, want %v", left, want)
		}
		// The deletes are visible before the controller counts them.
		if n := testutil.ToFloat64(pc.m.prunes.WithLabelValues("false")); n != 2 {
			return fmt.Errorf("mcs_controller_prunes_total %v, want 2", n)
		}
		return nil
	})
}

// renderedPool reads names people and other controllers choose: it must
// not panic, and a rendered name it accepts names a pool.
func FuzzRenderedPool(f *testing.F) {
	for _, s := range []string{"rendered-worker-0123456789abcdef0123456789abcdef", "rendered--0123456789abcdef0123456789abcdef", "rendered-a-b-0123456789abcdef0123456789abcdef", "00-worker", ""} {
		f.Add(s, "")
		f.Add(s, "infra")
	}
	f.Fuzz(func(t *testing.T, name, owner string) {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{render.AnnotationGeneratedByController: "v"}}}
		yes := true
		if owner != "" {
			m.OwnerReferences = []metav1.OwnerReference{{Kind: render.KindMachineConfigPool, Name: owner, Controller: &yes}}
		}
		pool, ok := renderedPool(m)
		switch {
		case owner != "" && (!ok || pool != owner):
			t.Errorf("owned by %q: %q %v", owner, pool, ok)
		case owner == "" && ok && (pool == "" || name != "rendered-"+pool+name[len("rendered-")+len(pool):]):
			t.Errorf("%q read as pool %q", name, pool)
		}
	})
}

// checkPruneList checks that the listing says who uses each config, or
// why it is kept.
func checkPruneList(t *testing.T, cp *kubetest.ControlPlane, meta metadata.Interface, names []string) {
	t.Helper()
	rep, err := Prune(context.Background(), cp.Dynamic, meta, PruneOptions{List: true, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	why := map[string]string{}
	for _, r := range rep.Configs {
		why[r.Name] = strings.Join(r.InUse, ", ") + "|" + r.Kept
	}
	for name, want := range map[string]string{
		names[0]: "node n1 currentConfig, node n1 desiredConfig, node n2 currentConfig|",
		names[1]: "node n2 desiredConfig|",
		names[2]: "pool worker status|",
		names[7]: "pool worker spec|",
		names[6]: "|newest 2 of pool worker not in use",
		names[5]: "|newest 2 of pool worker not in use",
	} {
		if why[name] != want {
			t.Errorf("%s: %q, want %q", name, why[name], want)
		}
	}
	if len(rep.Planned) != 2 || len(rep.Deleted) != 0 {
		t.Errorf("listing: planned %v, deleted %v", rep.Planned, rep.Deleted)
	}
}

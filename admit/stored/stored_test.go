package stored

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/internal/shareddata"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

var shared kubetest.Shared

func TestMain(m *testing.M) { shared.Main(m, "admit/stored", false, nil) }

// The ceiling the tests hold: Ignition v2.19.0's, the newest spec the
// release before reads (specs up to 3.4).
var rollback = convert.V3_4

// cluster is a realdata set as OpenShift stores it: every MachineConfig as
// written (the generated ones at 3.5.0), each pool's rendered config at
// 3.5.0 with the pool as its controller owner, the pools naming them, and a
// node of each pool on its rendered config.
type cluster struct {
	cp       *kubetest.ControlPlane
	objects  []*unstructured.Unstructured // the MachineConfigs, as sent
	rendered map[string]string            // pool -> rendered config
}

func newCluster(t *testing.T, set string) *cluster {
	t.Helper()
	cp := shared.Need(t)
	dir := shareddata.Path(t, "realdata", set)
	c := &cluster{cp: cp, rendered: map[string]string{}}
	t.Cleanup(func() {
		cp.DeleteAll(t, kube.MachineConfigs, kube.MachineConfigPools)
		_ = cp.Kube.CoreV1().Nodes().DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	for _, u := range kubetest.DecodeDir(t, dir) {
		switch u.GetKind() {
		case render.KindMachineConfigPool:
			unstructured.RemoveNestedField(u.Object, "status")
			cp.Apply(t, u)
		case render.KindMachineConfig:
			c.objects = append(c.objects, u)
		}
	}
	cp.Apply(t, c.objects...)
	s := servetest.Load(t, dir)
	for _, pool := range s.PoolNames() {
		c.addRendered(t, s, pool)
	}
	return c
}

// addRendered stores pool's rendered config as OpenShift's render
// controller does (at 3.5.0, owned by the pool), points the pool at it and
// puts a node on it.
func (c *cluster) addRendered(t *testing.T, s *render.Set, pool string) {
	t.Helper()
	res, b := servetest.OpenShiftRendered(t, s, pool)
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	p, err := c.cp.Dynamic.Resource(kube.MachineConfigPools).Get(context.Background(), pool, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: p.GetAPIVersion(), Kind: p.GetKind(), Name: pool, UID: p.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}})
	c.cp.Apply(t, u)
	c.objects = append(c.objects, u)
	c.rendered[pool] = res.Name
	if err := unstructured.SetNestedField(p.Object, res.Name, "spec", "configuration", "name"); err != nil {
		t.Fatal(err)
	}
	c.cp.Apply(t, p)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + pool, Annotations: map[string]string{
		"machineconfiguration.openshift.io/currentConfig": res.Name,
		"machineconfiguration.openshift.io/desiredConfig": res.Name,
		"machineconfiguration.openshift.io/state":         "Done",
	}, Labels: map[string]string{"node-role.kubernetes.io/" + pool: ""}}}
	if _, err := c.cp.Kube.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// above is what the rollback release cannot parse, read from the objects
// as sent (not by this package): name -> the pool it belongs to, by the
// role label or the rendered config's owner.
func (c *cluster) above(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, u := range c.objects {
		v, _, _ := unstructured.NestedString(u.Object, "spec", "config", "ignition", "version")
		if v == "" {
			continue
		}
		if pv, err := convert.ParseVersion(v); err != nil || !rollback.Less(pv) {
			continue
		}
		pool := u.GetLabels()["machineconfiguration.openshift.io/role"]
		for _, r := range u.GetOwnerReferences() {
			if r.Kind == render.KindMachineConfigPool {
				pool = r.Name
			}
		}
		out[u.GetName()] = pool
	}
	return out
}

func counts(m map[string]string, pools ...string) map[string]int {
	out := map[string]int{}
	for _, p := range pools {
		out[p] = 0
	}
	for _, p := range m {
		out[p]++
	}
	return out
}

func startWatch(t *testing.T, cp *kubetest.ControlPlane, ceiling convert.Version) (*Watch, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	w, err := New(Config{Client: cp.Dynamic, Ceiling: func() (convert.Version, bool) { return ceiling, true }, Registry: reg, Log: kubetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	kubetest.Run(t, w)
	return w, reg
}

// waitGauge waits until the gauge reads want, pool by pool.
func waitGauge(t *testing.T, w *Watch, reg *prometheus.Registry, want map[string]int) {
	t.Helper()
	w.refresh()
	kubetest.Eventually(t, time.Minute, fmt.Sprintf("the gauge at %v", want), func() error {
		got, err := gaugeValues(reg)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("gauge %v, report %+v", got, w.latest())
		}
		return nil
	})
}

func gaugeValues(reg *prometheus.Registry) (map[string]int, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	got := map[string]int{}
	for _, mf := range mfs {
		if mf.GetName() != "mcs_admit_unreadable_machineconfigs" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = int(m.GetGauge().GetValue())
		}
	}
	return got, nil
}

// snapshot is what lower-existing must leave as it is: every
// MachineConfig's metadata but its resourceVersion and managedFields,
// every pool, every node.
func snapshot(t *testing.T, cp *kubetest.ControlPlane) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	mcs, err := cp.Dynamic.Resource(kube.MachineConfigs).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range mcs.Items {
		m := u.DeepCopy()
		m.SetResourceVersion("")
		m.SetManagedFields(nil)
		m.SetGeneration(0)
		fmt.Fprintf(&b, "%s\n", kubetest.YAML(m.Object["metadata"]))
		unstructured.RemoveNestedField(m.Object, "spec", "config")
		fmt.Fprintf(&b, "%s\n", kubetest.YAML(m.Object["spec"]))
	}
	pools, err := cp.Dynamic.Resource(kube.MachineConfigPools).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range pools.Items {
		fmt.Fprintf(&b, "%s\n", kubetest.YAML(u.Object))
	}
	nodes, err := cp.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		fmt.Fprintf(&b, "%s %v %s\n", n.Name, n.Annotations, n.ResourceVersion)
	}
	return b.String()
}

// configs are the stored spec.configs by name.
func configs(t *testing.T, cp *kubetest.ControlPlane) map[string][]byte {
	t.Helper()
	list, err := cp.Dynamic.Resource(kube.MachineConfigs).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for i := range list.Items {
		if c := configOf(&list.Items[i]); c != nil { // a config of kernel arguments alone has none
			out[list.Items[i].GetName()] = c
		}
	}
	return out
}

func run(t *testing.T, r Restore) []Outcome {
	t.Helper()
	var out []Outcome
	if err := LowerExisting(context.Background(), r, func(o Outcome) { out = append(out, o) }); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b Outcome) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func names(os []Outcome) []string {
	var out []string
	for _, o := range os {
		out = append(out, o.Name)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A cluster holding OpenShift's 3.5.0 configs, with a rollback release
// that reads 3.4: the gauge counts them per pool, the dry run lists each
// with its spec before and after and writes nothing, --confirm stores
// each again at the lowest spec, equivalent, with the pools, the nodes and
// every object's metadata as they were, and the gauge falls to 0.
func TestLowerExisting(t *testing.T) {
	c := newCluster(t, "none")
	above := c.above(t)
	if len(above) < 10 || above[c.rendered["worker"]] != "worker" {
		t.Fatalf("the test data: %d MachineConfigs above %s: %v", len(above), rollback, above)
	}
	w, reg := startWatch(t, c.cp, rollback)
	waitGauge(t, w, reg, counts(above, "master", "worker"))
	for _, f := range w.latest().Unreadable {
		if !f.Fixable || f.Stored != "3.5.0" || !convert.IsOutputVersion(mustVersion(f.Lowest)) || rollback.Less(mustVersion(f.Lowest)) {
			t.Errorf("finding %+v", f)
		}
	}

	before, sent := snapshot(t, c.cp), configs(t, c.cp)
	dry := run(t, Restore{Client: c.cp.Dynamic, Ceiling: rollback})
	if got := names(dry); !slices.Equal(got, sortedKeys(above)) {
		t.Fatalf("dry run lists %v, want %v", got, sortedKeys(above))
	}
	for _, o := range dry {
		if o.Written || o.To == "" || o.To != o.Lowest || o.Stored != "3.5.0" {
			t.Errorf("dry run: %+v", o)
		}
	}
	if after := snapshot(t, c.cp); after != before || !reflect.DeepEqual(configs(t, c.cp), sent) {
		t.Fatal("the dry run changed the cluster")
	}

	done := run(t, Restore{Client: c.cp.Dynamic, Ceiling: rollback, Confirm: true})
	stored := configs(t, c.cp)
	for i, o := range done {
		if !o.Written || o.Err != nil || o.To != dry[i].To {
			t.Errorf("--confirm: %+v", o)
		}
		checkEquivalent(t, o.Name, sent[o.Name], stored[o.Name], o.To)
	}
	if after := snapshot(t, c.cp); after != before {
		t.Errorf("metadata, pools or nodes changed:\n%s\nwas\n%s", after, before)
	}
	waitGauge(t, w, reg, counts(nil, "master", "worker"))
	if again := run(t, Restore{Client: c.cp.Dynamic, Ceiling: rollback, Confirm: true}); len(again) != 0 {
		t.Errorf("a second run finds %v", names(again))
	}

	// The release before's own reader (Ignition v2.19.0's config.Parse,
	// specs up to 3.4) refused what was stored, and parses every one now.
	reader := testkit.RollbackReader(t, "v2.19.0")
	for name, verdict := range testkit.ReaderVerdicts(t, reader, sent) {
		if _, ok := above[name]; ok != (verdict != "") {
			t.Errorf("%s as OpenShift stored it: the reader says %q", name, verdict)
		}
	}
	for name, verdict := range testkit.ReaderVerdicts(t, reader, configs(t, c.cp)) {
		if verdict != "" {
			t.Errorf("%s after lower-existing: the reader says %q", name, verdict)
		}
	}
}

// checkEquivalent parses both configs, as any reader does, and requires
// the same config at the spec wanted.
func checkEquivalent(t *testing.T, name string, sent, stored []byte, spec string) {
	t.Helper()
	a, err := convert.Parse(sent)
	if err != nil {
		t.Fatalf("%s as sent: %v", name, err)
	}
	b, err := convert.Parse(stored)
	if err != nil {
		t.Fatalf("%s as stored: %v", name, err)
	}
	if b.Version.String() != spec {
		t.Errorf("%s stored at %s, want %s", name, b.Version, spec)
	}
	if !reflect.DeepEqual(a.Config, b.Config) {
		t.Errorf("%s: the stored config is not the one sent", name)
	}
}

// racing is a client whose first MachineConfig update is preceded by
// another writer's: lower-existing's Update then carries a stale
// resourceVersion.
type racing struct {
	dynamic.Interface
	before func()
}

func (r racing) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return racingResource{r.Interface.Resource(gvr), r.before}
}

type racingResource struct {
	dynamic.NamespaceableResourceInterface
	before func()
}

func (r racingResource) Update(ctx context.Context, u *unstructured.Unstructured, o metav1.UpdateOptions, sub ...string) (*unstructured.Unstructured, error) {
	r.before()
	return r.NamespaceableResourceInterface.Update(ctx, u, o, sub...)
}

// A write between lower-existing's read and its Update is a conflict: it
// reads again and stores the lowered config over the other writer's
// object, whose change is kept; and a config that another writer lowered
// meanwhile is left alone.
func TestLowerExistingConflict(t *testing.T) {
	cp := shared.Need(t)
	t.Cleanup(func() { cp.DeleteAll(t, kube.MachineConfigs) })
	mc := kubetest.Object(t, `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 50-race, labels: {machineconfiguration.openshift.io/role: worker}}
spec: {config: {ignition: {version: 3.5.0}, storage: {files: [{path: /etc/race, contents: {source: "data:,x"}}]}}}`)
	cp.Apply(t, mc)
	ctx := context.Background()
	raced := 0
	client := racing{cp.Dynamic, func() {
		if raced++; raced > 1 {
			return
		}
		cur, err := cp.Dynamic.Resource(machineConfigs).Get(ctx, "50-race", metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		cur.SetAnnotations(map[string]string{"other": "writer"})
		if _, err := cp.Dynamic.Resource(machineConfigs).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}}
	out := run(t, Restore{Client: client, Ceiling: rollback, Confirm: true})
	if len(out) != 1 || !out[0].Written || out[0].Err != nil || raced != 2 {
		t.Fatalf("outcomes %+v after %d updates", out, raced)
	}
	got, err := cp.Dynamic.Resource(machineConfigs).Get(ctx, "50-race", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(got.Object, "spec", "config", "ignition", "version"); v != out[0].To || got.GetAnnotations()["other"] != "writer" {
		t.Errorf("stored at %s with annotations %v", v, got.GetAnnotations())
	}

	// Lowered, or deleted, by someone else between the list and the write:
	// nothing to do.
	r := Restore{Client: cp.Dynamic, Ceiling: rollback, Confirm: true}
	if written, gone, err := r.write(ctx, "50-race"); written || !gone || err != nil {
		t.Errorf("already lowered: written %v, gone %v, %v", written, gone, err)
	}
	if written, gone, err := r.write(ctx, "50-nothere"); written || !gone || err != nil {
		t.Errorf("deleted: written %v, gone %v, %v", written, gone, err)
	}
}

// The watch follows the ceiling: nothing reported before it is known (no
// series, not a false 0), then each change counted again on refresh; with
// no ceiling, what is stored above its lowest spec.
func TestWatchFollowsCeiling(t *testing.T) {
	cp := shared.Need(t)
	t.Cleanup(func() { cp.DeleteAll(t, kube.MachineConfigs, kube.MachineConfigPools) })
	cp.Apply(t, kubetest.DecodeObjects(t, []byte(mctest.RolePool("worker")+`---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 50-at-35, labels: {machineconfiguration.openshift.io/role: worker}}
spec: {config: {ignition: {version: 3.5.0}}}
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 50-at-34, labels: {machineconfiguration.openshift.io/role: worker}}
spec: {config: {ignition: {version: 3.4.0}}}
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 50-nobody}
spec: {config: {ignition: {version: 3.5.0}}}
`))...)
	var mu sync.Mutex
	var ceiling convert.Version
	known := false
	reg := prometheus.NewPedanticRegistry()
	w, err := New(Config{Client: cp.Dynamic, Registry: reg, Log: kubetest.Logger(t), Ceiling: func() (convert.Version, bool) {
		mu.Lock()
		defer mu.Unlock()
		return ceiling, known
	}})
	if err != nil {
		t.Fatal(err)
	}
	kubetest.Run(t, w)
	set := func(v convert.Version) {
		mu.Lock()
		ceiling, known = v, true
		mu.Unlock()
	}
	// Not known: the informers list, and nothing is reported.
	kubetest.Eventually(t, time.Minute, "listed", func() error {
		if !w.mcs.HasSynced() || !w.pools.HasSynced() {
			return fmt.Errorf("not listed")
		}
		return nil
	})
	w.refresh()
	if got, err := gaugeValues(reg); err != nil || len(got) != 0 || w.latest() != nil {
		t.Fatalf("before the ceiling is known: gauge %v (%v), report %+v", got, err, w.latest())
	}
	set(convert.V3_4)
	waitGauge(t, w, reg, map[string]int{"worker": 1, noPool: 1})
	set(convert.V3_5)
	waitGauge(t, w, reg, map[string]int{"worker": 0})
	set(convert.Version{})
	waitGauge(t, w, reg, map[string]int{"worker": 2, noPool: 1})
	if b, err := json.Marshal(w.Status()); err != nil || strings.Contains(string(b), "ceiling") || !strings.Contains(string(b), `"50-nobody"`) {
		t.Errorf("/status's section with no ceiling: %s %v", b, err)
	}
}

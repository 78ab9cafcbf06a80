package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// newServerSource is a server's source (self or pool mode) reading the
// control plane until the test ends.
func newServerSource(t *testing.T, cp *kubetest.ControlPlane, mode kube.Mode, opts render.Options) *kube.Source {
	t.Helper()
	s, err := kube.New(kube.Config{REST: cp.Admin, Mode: mode, Options: opts, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	kubetest.Run(t, s)
	return s
}

// served is the rendered config name a server source gives the pool.
func served(t *testing.T, s *kube.Source, pool string) (string, error) {
	t.Helper()
	in, err := s.Load(context.Background())
	if err != nil {
		return "", err
	}
	if r := servetest.ByPool(in.Results)[pool]; r != nil {
		return r.Name, nil
	}
	return "", fmt.Errorf("pool %s not served: %v", pool, in.Failed[pool])
}

// pointedAt checks that the pool names a stored rendered config, the one a
// server in self mode renders, written as OpenShift's render controller
// writes it, from exactly the sources given (and with the file contents
// given), and that the pool is not RenderDegraded. It returns the name.
func pointedAt(t *testing.T, cp *kubetest.ControlPlane, server *kube.Source, poolName string, sources []string, contains ...string) (string, error) {
	p := pool(t, cp, poolName)
	name := configuration(p)
	if want, err := served(t, server, poolName); err != nil || want != name {
		return "", fmt.Errorf("pool %s names %q, the server renders %q (%v)", poolName, name, want, err)
	}
	var got []string
	srcs, _, _ := unstructured.NestedSlice(p.Object, "spec", "configuration", "source")
	for _, s := range srcs {
		m := s.(map[string]any)
		if m["kind"] != "MachineConfig" || m["apiVersion"] != render.APIVersion {
			return "", fmt.Errorf("source %v", m)
		}
		got = append(got, m["name"].(string))
	}
	if !slices.Equal(got, sources) {
		return "", fmt.Errorf("pool %s sources %v, want %v", poolName, got, sources)
	}
	mc, err := cp.Dynamic.Resource(kube.MachineConfigs).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	owners := mc.GetOwnerReferences()
	if len(owners) != 1 || owners[0].Kind != "MachineConfigPool" || owners[0].Name != poolName || owners[0].UID != p.GetUID() ||
		owners[0].APIVersion != render.APIVersion || owners[0].Controller == nil || !*owners[0].Controller || owners[0].BlockOwnerDeletion == nil || !*owners[0].BlockOwnerDeletion {
		return "", fmt.Errorf("%s owners %+v", name, owners)
	}
	if mc.GetAnnotations()[render.AnnotationGeneratedByController] == "" {
		return "", fmt.Errorf("%s annotations %v", name, mc.GetAnnotations())
	}
	cfg, _, _ := unstructured.NestedMap(mc.Object, "spec", "config")
	js := fmt.Sprint(cfg)
	for _, c := range contains {
		if !strings.Contains(js, c) {
			return "", fmt.Errorf("%s lacks %q", name, c)
		}
	}
	if c := poolCondition(p, conditionRenderDegraded); c == nil || c["status"] != "False" {
		return "", fmt.Errorf("pool %s RenderDegraded %v", poolName, c)
	}
	return name, nil
}

func deleteObject(t *testing.T, cp *kubetest.ControlPlane, u *unstructured.Unstructured) {
	t.Helper()
	res, _ := cp.Resource(t, u)
	if err := res.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// MachineConfigs and pools created, changed and deleted: each pool names
// the rendered config its MachineConfigs make, the very one a server in
// self mode renders, and an earlier state's config is still there.
func TestFollowsChanges(t *testing.T) {
	cp := needControlPlane(t)
	cp.Apply(t, poolObject(t, "worker"), mcObject(t, "50-worker", "worker", "one"))
	c := startController(t, cp, Config{})
	server := newServerSource(t, cp, kube.ModeSelf, render.Options{})

	names := map[string]string{}
	steps := []struct {
		name   string
		change func()
		want   map[string][]string // pool → sources
		has    string
	}{
		{"first render", func() {}, map[string][]string{"worker": {"50-worker"}}, "data:,one"},
		{"a MachineConfig changed", func() { cp.Apply(t, mcObject(t, "50-worker", "worker", "two")) }, map[string][]string{"worker": {"50-worker"}}, "data:,two"},
		{"a MachineConfig added", func() { cp.Apply(t, mcObject(t, "60-worker", "worker", "three")) },
			map[string][]string{"worker": {"50-worker", "60-worker"}}, "/etc/60-worker"},
		{"a pool added", func() { cp.Apply(t, mcObject(t, "70-infra", "infra", "four"), poolObject(t, "infra")) },
			map[string][]string{"worker": {"50-worker", "60-worker"}, "infra": {"50-worker", "60-worker", "70-infra"}}, "data:,two"},
		{"a MachineConfig deleted", func() { deleteObject(t, cp, mcObject(t, "60-worker", "worker", "")) },
			map[string][]string{"worker": {"50-worker"}, "infra": {"50-worker", "70-infra"}}, "data:,two"},
	}
	for _, s := range steps {
		s.change()
		for p, srcs := range s.want {
			kubetest.Eventually(t, 20*time.Second, s.name+": pool "+p, func() error {
				n, err := pointedAt(t, cp, server, p, srcs, s.has)
				names[s.name+"/"+p] = n
				return err
			})
		}
	}
	// Content-addressed: back to an earlier state is back to its config,
	// and every state's config is kept (append, don't replace).
	if a, b := names["a MachineConfig deleted/worker"], names["a MachineConfig changed/worker"]; a != b {
		t.Errorf("the same MachineConfigs render to %s and %s", a, b)
	}
	worker := renderedConfigs(t, cp, "worker")
	for _, step := range []string{"first render", "a MachineConfig changed", "a MachineConfig added"} {
		if worker[names[step+"/worker"]] == nil {
			t.Errorf("%s's config %s is gone", step, names[step+"/worker"])
		}
	}
	if len(worker) != 3 {
		t.Errorf("%d rendered worker configs, want 3", len(worker))
	}
	// 3 worker, 2 infra; one more when the pool's informer delivers it before
	// the MachineConfig informer delivers 70-infra (two informers, no order).
	if n := testutil.ToFloat64(c.m.renders.WithLabelValues("false")); n < 5 || n > 6 {
		t.Errorf("mcs_controller_renders_written_total %v, want 5 (3 worker, 2 infra) or 6", n)
	}

	// A pool deleted: forgotten; its rendered configs are owned by it, so
	// the cluster's garbage collector takes them.
	infra := pool(t, cp, "infra")
	deleteObject(t, cp, infra)
	cp.Apply(t, mcObject(t, "50-worker", "worker", "five"))
	kubetest.Eventually(t, 20*time.Second, "the change after the pool's deletion", func() error {
		_, err := pointedAt(t, cp, server, "worker", []string{"50-worker"}, "data:,five")
		return err
	})
	if _, ok := c.book.copy().Pools["infra"]; ok {
		t.Error("/status still has the deleted pool")
	}
	for name, u := range renderedConfigs(t, cp, "infra") {
		if o := u.GetOwnerReferences(); len(o) != 1 || o[0].UID != infra.GetUID() {
			t.Errorf("%s owners %v", name, o)
		}
	}
}

// badMC is a MachineConfig for worker whose one file is at path.
func badMC(path string) string {
	return mctest.Config{Name: "99-worker-bad", Role: "worker", Files: []mctest.File{{Path: path, Source: "data:,x"}}}.YAML()
}

// An invalid MachineConfig added to a live pool: RenderDegraded with the
// file, object and JSON path; the pool keeps naming (and the servers keep
// serving) its previous config; the fix clears it.
func TestBadInputDegradesThePool(t *testing.T) {
	cp := needControlPlane(t)
	cp.Apply(t, poolObject(t, "worker"), mcObject(t, "50-worker", "worker", "one"))
	c := startController(t, cp, Config{})
	self := newServerSource(t, cp, kube.ModeSelf, render.Options{})
	poolMode := newServerSource(t, cp, kube.ModePool, render.Options{})
	var good string
	kubetest.Eventually(t, 20*time.Second, "first render", func() (err error) {
		good, err = pointedAt(t, cp, self, "worker", []string{"50-worker"})
		return err
	})

	cp.Apply(t, object(t, badMC("etc/relative")))
	kubetest.Eventually(t, 20*time.Second, "RenderDegraded", func() error {
		c := poolCondition(pool(t, cp, "worker"), conditionRenderDegraded)
		if c == nil || c["status"] != "True" {
			return fmt.Errorf("condition %v", c)
		}
		msg := c["message"].(string)
		for _, want := range []string{"Failed to render configuration for pool worker", "kubernetes: MachineConfig/99-worker-bad: $.spec.config.storage.files.0.path"} {
			if !strings.Contains(msg, want) {
				return fmt.Errorf("message %q lacks %q", msg, want)
			}
		}
		if c["reason"] != "RenderFailed" {
			return fmt.Errorf("reason %v", c["reason"])
		}
		return nil
	})
	if got := configuration(pool(t, cp, "worker")); got != good {
		t.Errorf("the pool names %s, want the previous %s", got, good)
	}
	if got, err := served(t, poolMode, "worker"); err != nil || got != good {
		t.Errorf("a server in pool mode serves %s (%v), want %s", got, err, good)
	}
	if st := c.book.copy().Pools["worker"]; st == nil || !strings.Contains(st.Degraded, "99-worker-bad") {
		t.Errorf("/status %+v", st)
	}
	if v := testutil.ToFloat64(c.m.degraded.WithLabelValues("worker")); v != 1 {
		t.Errorf("mcs_controller_render_degraded %v", v)
	}

	cp.Apply(t, object(t, badMC("/etc/fixed")))
	kubetest.Eventually(t, 20*time.Second, "cleared after the fix", func() error {
		name, err := pointedAt(t, cp, self, "worker", []string{"50-worker", "99-worker-bad"}, "/etc/fixed")
		if err == nil && name == good {
			return errors.New("still the old config")
		}
		return err
	})
}

var kargsMC = mctest.Config{Name: "99-worker-kargs", Role: "worker", Version: "3.3.0",
	Config: map[string]any{"kernelArguments": map[string]any{"shouldExist": []string{"nosmt"}}}}.YAML()

// --max-spec: a pool needing more is not written; the condition names the
// field that forces the spec, and where it comes from.
func TestMaxSpecRefuses(t *testing.T) {
	cp := needControlPlane(t)
	cp.Apply(t, poolObject(t, "worker"), mcObject(t, "50-worker", "worker", "one"), object(t, kargsMC))
	startController(t, cp, Config{Options: render.Options{MaxSpec: convert.V3_2}})
	kubetest.Eventually(t, 20*time.Second, "RenderDegraded", func() error {
		c := poolCondition(pool(t, cp, "worker"), conditionRenderDegraded)
		if c == nil || c["status"] != "True" || c["reason"] != "SpecCeilingExceeded" {
			return fmt.Errorf("condition %v", c)
		}
		msg := c["message"].(string)
		if !strings.Contains(msg, "MachineConfig/99-worker-kargs: $.spec.config.kernelArguments.shouldExist") || !strings.Contains(msg, "3.3.0") {
			return fmt.Errorf("message %q", msg)
		}
		return nil
	})
	if n := len(renderedConfigs(t, cp, "worker")); n != 0 {
		t.Errorf("%d rendered configs written above the ceiling", n)
	}
}

// --dry-run: every write is sent with dryRun=All and reported; nothing is
// stored.
func TestDryRunWritesNothing(t *testing.T) {
	cp := needControlPlane(t)
	cp.Apply(t, poolObject(t, "worker"), mcObject(t, "50-worker", "worker", "one"))
	c := startController(t, cp, Config{DryRun: true, Prune: true})
	kubetest.Eventually(t, 20*time.Second, "reported", func() error {
		st := c.book.copy().Pools["worker"]
		if st == nil || st.Rendered == "" {
			return errors.New("no render yet")
		}
		w := strings.Join(st.Writes, "\n")
		for _, want := range []string{"dry run: would have created rendered MachineConfig " + st.Rendered, "dry run: would have pointed pool at " + st.Rendered} {
			if !strings.Contains(w, want) {
				return fmt.Errorf("writes %q lack %q", w, want)
			}
		}
		return nil
	})
	if n := len(renderedConfigs(t, cp, "worker")); n != 0 {
		t.Errorf("%d rendered configs stored", n)
	}
	p := pool(t, cp, "worker")
	if configuration(p) != "" || poolCondition(p, conditionRenderDegraded) != nil {
		t.Errorf("pool written: %v", p.Object["spec"])
	}
	if n := testutil.ToFloat64(c.m.renders.WithLabelValues("true")); n < 1 {
		t.Errorf("dry-run renders %v", n)
	}
	if n := testutil.ToFloat64(c.m.renders.WithLabelValues("false")); n != 0 {
		t.Errorf("renders written %v", n)
	}
	rec := httptest.NewRecorder()
	c.Handler(c.reg).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status", nil))
	for _, want := range []string{`"dryRun": true`, `"leading": true`, "would have created"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/status lacks %s:\n%s", want, rec.Body)
		}
	}
	rec = httptest.NewRecorder()
	c.Handler(c.reg).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{"mcs_controller_leader 1", `mcs_controller_renders_written_total{dry_run="true"}`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A rendered config deleted under its pool is written again (the pool
// still names it); one tampered with is never rewritten: the pool is
// RenderDegraded, naming it, until it is deleted.
func TestRenderedConfigDeletedOrTampered(t *testing.T) {
	cp := needControlPlane(t)
	cp.Apply(t, poolObject(t, "worker"), mcObject(t, "50-worker", "worker", "one"))
	c := startController(t, cp, Config{ReleaseOnCancel: true})
	var name string
	kubetest.Eventually(t, 20*time.Second, "first render", func() error {
		if name = configuration(pool(t, cp, "worker")); name == "" {
			return errors.New("not yet")
		}
		return nil
	})
	mcs := cp.Dynamic.Resource(kube.MachineConfigs)
	ctx := context.Background()
	if err := mcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 20*time.Second, "written again", func() error {
		_, err := mcs.Get(ctx, name, metav1.GetOptions{})
		return err
	})
	c.stop()

	u, err := mcs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, []any{"tampered"}, "spec", "kernelArguments"); err != nil {
		t.Fatal(err)
	}
	if _, err := mcs.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	startController(t, cp, Config{})
	kubetest.Eventually(t, 20*time.Second, "RenderDegraded", func() error {
		c := poolCondition(pool(t, cp, "worker"), conditionRenderDegraded)
		if c == nil || c["status"] != "True" || !strings.Contains(c["message"].(string), "MachineConfig/"+name+": $.spec: a rendered MachineConfig of that name exists with other content") {
			return fmt.Errorf("condition %v", c)
		}
		return nil
	})
	if got, _ := mcs.Get(ctx, name, metav1.GetOptions{}); !strings.Contains(fmt.Sprint(got.Object["spec"]), "tampered") {
		t.Error("the tampered config was rewritten")
	}
	if err := mcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	server := newServerSource(t, cp, kube.ModeSelf, render.Options{})
	kubetest.Eventually(t, 20*time.Second, "written again and cleared", func() error {
		_, err := pointedAt(t, cp, server, "worker", []string{"50-worker"}, "data:,one")
		return err
	})
}

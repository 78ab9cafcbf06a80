package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/source/kube"
)

// Pruning while nodes are pointed at their pool's config, in a loop, as
// upstream's node controller points them: at the config the pool names,
// read from a view that lags (here up to 300ms, under the 1s grace). A
// checker reads every node's desiredConfig and currentConfig and the
// config they name all along: none is ever missing, while configs are
// pruned, and none had to be created again.
func TestPruneRacesNodeAnnotations(t *testing.T) {
	c, missing := pruneRace(t, 300*time.Millisecond, time.Second)
	for _, m := range missing {
		t.Errorf("%s, which does not exist (for %v)", m.what, m.gone)
	}
	if n := testutil.ToFloat64(c.m.pruneRestores); n != 0 {
		t.Errorf("%v pruned configs created again: a node named one after the checks", n)
	}
}

// A node controller whose view lags more than the grace (2s against 1s)
// points nodes at configs already pruned: each is created again, the node
// naming a missing config for no more than a prune's tick and the checks,
// and mcs_controller_prune_restores_total counts them.
func TestPruneRestoresBeyondGrace(t *testing.T) {
	c, missing := pruneRace(t, 2*time.Second, time.Second)
	if n := testutil.ToFloat64(c.m.pruneRestores); n < 1 {
		t.Errorf("no pruned config created again: the race was not run")
	}
	for _, m := range missing {
		if m.gone > 5*time.Second {
			t.Errorf("%s, which did not exist for %v", m.what, m.gone)
		}
	}
}

// missingConfig is a rendered config a node named while it did not exist,
// and for how long the checker saw it so.
type missingConfig struct {
	what string
	gone time.Duration
}

// pruneRace runs a pruning controller (grace given, Keep 0) while a fake
// node controller whose view of the pool lags lag points nodes at configs,
// and 25 edits make new ones; it returns the controller and what a checker
// saw nodes name while missing.
func pruneRace(t *testing.T, lag, grace time.Duration) (*running, []missingConfig) {
	cp := needControlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := []string{"n1", "n2", "n3"}
	cp.Apply(t, poolObject(t, "worker"), mcObject(t, "50-worker", "worker", "v0"))
	for _, n := range nodes {
		cp.Apply(t, nodeObject(n, nil))
	}
	c := startController(t, cp, Config{Prune: true, Keep: 0, PruneGrace: grace})
	kubetest.Eventually(t, 20*time.Second, "rendered", func() error {
		if configuration(pool(t, cp, "worker")) == "" {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	var failures []string
	report := func(s string) { mu.Lock(); failures = append(failures, s); mu.Unlock() }
	var missing []missingConfig
	wg.Add(2)
	go func() { defer wg.Done(); fakeNodeController(ctx, t, cp, nodes, lag, report) }()
	go func() { defer wg.Done(); missing = checkNodesConfigs(ctx, cp) }()
	for i := 1; i <= 25; i++ {
		was := configuration(pool(t, cp, "worker"))
		cp.Apply(t, mcObject(t, "50-worker", "worker", fmt.Sprint("v", i)))
		kubetest.Eventually(t, 20*time.Second, fmt.Sprint("edit ", i, " written"), func() error {
			if configuration(pool(t, cp, "worker")) == was {
				return fmt.Errorf("the pool still names %s", was)
			}
			return nil
		})
	}
	// The lagging view catches up: every node names the pool's last config.
	last := configuration(pool(t, cp, "worker"))
	kubetest.Eventually(t, 20*time.Second, "the nodes at "+last, func() error {
		for _, n := range nodes {
			node, err := cp.Kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := node.Annotations[annotationDesiredConfig] + node.Annotations[annotationCurrentConfig]; got != last {
				return fmt.Errorf("node %s names %q", n, got)
			}
		}
		return nil
	})
	cancel()
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if n := testutil.ToFloat64(c.m.prunes.WithLabelValues("false")); n < 5 {
		t.Errorf("only %v configs pruned: the race was not run", n)
	}
	return c, missing
}

// checkNodesConfigs reads every node's desiredConfig and currentConfig and
// the config each names, over and over until ctx ends, and returns the
// configs a node named while they did not exist, with the longest the
// checker saw each so.
func checkNodesConfigs(ctx context.Context, cp *kubetest.ControlPlane) []missingConfig {
	since := map[string]time.Time{} // "node annotation config" → first seen missing
	longest := map[string]time.Duration{}
	for ctx.Err() == nil {
		l, err := cp.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		now := map[string]bool{}
		for _, n := range l.Items {
			for _, a := range []string{annotationDesiredConfig, annotationCurrentConfig} {
				name := n.Annotations[a]
				if name == "" {
					continue
				}
				if _, err := cp.Dynamic.Resource(kube.MachineConfigs).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					continue
				}
				// Gone: missing while named if the node still names it (it
				// may have moved on between the two reads).
				if cur, err := cp.Kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); err == nil && cur.Annotations[a] == name {
					k := fmt.Sprintf("node %s %s names %s", n.Name, a, name)
					now[k] = true
					if _, ok := since[k]; !ok {
						since[k] = time.Now()
					}
					longest[k] = max(longest[k], time.Since(since[k]))
				}
			}
		}
		for k := range since {
			if !now[k] {
				delete(since, k)
			}
		}
	}
	var out []missingConfig
	for k, d := range longest {
		out = append(out, missingConfig{k, d})
	}
	return out
}

// fakeNodeController points each node's desiredConfig at the config the
// pool named lag ago (its cache), and a moment later its currentConfig
// there too (the daemon applied it), until ctx ends.
func fakeNodeController(ctx context.Context, t *testing.T, cp *kubetest.ControlPlane, nodes []string, lag time.Duration, report func(string)) {
	type seen struct {
		at   time.Time
		name string
	}
	var history []seen
	for ctx.Err() == nil {
		p, err := cp.Dynamic.Resource(kube.MachineConfigPools).Get(ctx, "worker", metav1.GetOptions{})
		if err != nil {
			continue
		}
		history = append(history, seen{time.Now(), configuration(p)})
		// The newest entry at least lag old: the lagging cache's view.
		view := history[0].name
		for _, h := range history {
			if time.Since(h.at) >= lag {
				view = h.name
			}
		}
		for i, n := range nodes {
			annotation := annotationDesiredConfig
			if i == 0 {
				annotation = annotationCurrentConfig
			}
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, annotation, view)
			if _, err := cp.Kube.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && ctx.Err() == nil {
				report(fmt.Sprintf("patching node %s: %v", n, err))
			}
		}
		// A node controller's own pace against a real API server: its lag
		// is measured on the wall clock the controller's prune grace runs on.
		time.Sleep(20 * time.Millisecond)
	}
}

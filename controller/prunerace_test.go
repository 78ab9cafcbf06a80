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
// pruned.
func TestPruneRacesNodeAnnotations(t *testing.T) {
	cp := needControlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := []string{"n1", "n2", "n3"}
	cp.Apply(t, poolObject(t, "worker"), mcObject(t, "50-worker", "worker", "v0"))
	for _, n := range nodes {
		cp.Apply(t, nodeObject(n, nil))
	}
	c := startController(t, cp, Config{Prune: true, Keep: 0, PruneGrace: time.Second})
	kubetest.Eventually(t, 20*time.Second, "rendered", func() error {
		if configuration(pool(t, cp, "worker")) == "" {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	var violations []string
	report := func(s string) { mu.Lock(); violations = append(violations, s); mu.Unlock() }
	wg.Add(2)
	go func() { defer wg.Done(); fakeNodeController(ctx, t, cp, nodes, 300*time.Millisecond, report) }()
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			l, err := cp.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, n := range l.Items {
				for _, a := range []string{annotationDesiredConfig, annotationCurrentConfig} {
					name := n.Annotations[a]
					if name == "" {
						continue
					}
					if _, err := cp.Dynamic.Resource(kube.MachineConfigs).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
						continue
					}
					// Gone: a violation if the node still names it (it
					// may have moved on between the two reads).
					if now, err := cp.Kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); err == nil && now.Annotations[a] == name {
						report(fmt.Sprintf("node %s %s names %s, which does not exist", n.Name, a, name))
					}
				}
			}
		}
	}()
	for i := 1; i <= 25; i++ {
		cp.Apply(t, mcObject(t, "50-worker", "worker", fmt.Sprint("v", i)))
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	cancel()
	wg.Wait()
	if n := testutil.ToFloat64(c.m.prunes.WithLabelValues("false")); n < 5 {
		t.Errorf("only %v configs pruned: the race was not run", n)
	}
	for _, v := range violations {
		t.Error(v)
	}
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
		time.Sleep(20 * time.Millisecond)
	}
}

package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/source/kube"
)

// poolNames follows every pool's spec.configuration.name through a watch.
type poolNames struct {
	events chan poolEvent
	names  map[string]string
}

type poolEvent struct {
	pool, name string
	at         time.Time
}

func watchPools(b *testing.B, cp *kubetest.ControlPlane) *poolNames {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	res := cp.Dynamic.Resource(kube.MachineConfigPools)
	l, err := res.List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pn := &poolNames{events: make(chan poolEvent, 1024), names: map[string]string{}}
	for i := range l.Items {
		pn.names[l.Items[i].GetName()] = configuration(&l.Items[i])
	}
	w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: l.GetResourceVersion()})
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type == watch.Modified {
				pn.events <- poolEvent{u.GetName(), configuration(u), time.Now()}
			}
		}
	}()
	return pn
}

// until applies events until every pool of pools names a config other than
// the one it named before, and returns when each did.
func (pn *poolNames) until(b *testing.B, pools []string, within time.Duration) map[string]time.Time {
	before := map[string]string{}
	for _, p := range pools {
		before[p] = pn.names[p]
	}
	got := map[string]time.Time{}
	timeout := time.After(within)
	for len(got) < len(pools) {
		select {
		case ev := <-pn.events:
			pn.names[ev.pool] = ev.name
			if old, ok := before[ev.pool]; ok && ev.name != old && ev.name != "" {
				if _, done := got[ev.pool]; !done {
					got[ev.pool] = ev.at
				}
			}
		case <-timeout:
			b.Fatalf("after %s, %d of %d pools point at a new config", within, len(got), len(pools))
		}
	}
	return got
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// The time from a MachineConfig change to the pools pointing at their new
// rendered configs, on realdata with 20 pools (master, worker and 18
// custom pools that take the worker configs): a worker MachineConfig
// changed, so 19 pools re-render. Reported per pool and for the last of
// them, median and p99. Run with -benchtime=50x for stable percentiles.
func BenchmarkChangeToPoolPointing(b *testing.B) {
	cp := needControlPlane(b)
	cp.ApplyFiles(b, yamlFiles(b, clusterDir(b, "aws"))...)
	affected := []string{"worker"}
	for i := range 18 {
		name := fmt.Sprintf("custom-%02d", i)
		affected = append(affected, name)
		cp.Apply(b, poolObject(b, name), mcObject(b, "60-"+name, name, name))
	}
	cp.Apply(b, mcObject(b, "99-worker-bench", "worker", "start"))
	startController(b, cp, Config{})
	kubetest.Eventually(b, 2*time.Minute, "20 pools rendered", func() error {
		l, err := cp.Dynamic.Resource(kube.MachineConfigPools).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range l.Items {
			if configuration(&l.Items[i]) == "" {
				return fmt.Errorf("%s not yet", l.Items[i].GetName())
			}
		}
		if len(l.Items) != 20 {
			return fmt.Errorf("%d pools", len(l.Items))
		}
		return nil
	})
	pn := watchPools(b, cp)
	var perPool, all []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		cp.Apply(b, mcObject(b, "99-worker-bench", "worker", fmt.Sprint(i)))
		var last time.Duration
		for _, at := range pn.until(b, affected, time.Minute) {
			d := at.Sub(start)
			perPool = append(perPool, d)
			last = max(last, d)
		}
		all = append(all, last)
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(perPool, 0.5)), "pool-p50-ms")
	b.ReportMetric(ms(percentile(perPool, 0.99)), "pool-p99-ms")
	b.ReportMetric(ms(percentile(all, 0.5)), "all19-p50-ms")
	b.ReportMetric(ms(percentile(all, 0.99)), "all19-p99-ms")
}

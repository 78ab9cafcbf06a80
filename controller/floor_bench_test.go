package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// BenchmarkWritesFloor is what the API server and etcd alone cost for the
// writes a worker edit needs, upstream's and this controller's alike: for
// each of the N+1 pools it changes, the rendered MachineConfig created
// (the same bodies the controller sends, rendered beforehand, outside the
// timing), the pool pointed at it, and its RenderedConfigGenerated Event;
// Workers requests at a time, no client rate limit, no controller. Ten
// edits each: the median and worst wall time from the first request to the
// last pool pointed, and the CPU each process spent. No controller can
// point every pool sooner on the same machine than these writes take.
// MCS_FLOOR_WORKERS=N writes N pools at a time instead of the controller's
// 16 (what the parallelism does to the median and the tail).
func BenchmarkWritesFloor(b *testing.B) {
	for _, custom := range []int{0, 18, 100} {
		b.Run(fmt.Sprintf("pools=%d", custom+2), func(b *testing.B) {
			cp := needControlPlane(b)
			dir := floorCluster(b, cp, custom)
			w := floorWriter(b, cp)
			pn := watchPools(b, cp)
			var walls []time.Duration
			cpu := map[string]time.Duration{}
			defer apiserverProfile(b, cp, fmt.Sprintf("floor%d", custom+2))()
			for i := 0; i < b.N; i++ {
				for e := range 10 {
					bodies := floorBodies(b, cp, dir, fmt.Sprint("floor-", i, "-", e))
					runtime.GC()
					before := cpuTimes(b, os.Getpid())
					start := time.Now()
					w.write(b, bodies)
					var last time.Duration
					for _, at := range pn.until(b, slices.Collect(mapKeys(bodies)), time.Minute) {
						last = max(last, at.Sub(start))
					}
					walls = append(walls, last)
					for name, t := range cpuTimes(b, os.Getpid()) {
						if name != "controller" { // this test process: the client
							cpu[name] += t - before[name]
						}
					}
				}
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(percentile(walls, 0.5)), "median-ms")
			b.ReportMetric(ms(slices.Max(walls)), "worst-ms")
			for name, t := range cpu {
				b.ReportMetric(ms(t)/float64(len(walls)), name+"-cpu-ms/edit")
			}
		})
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// floorCluster applies realdata/aws with custom pools, as
// BenchmarkEditToPointed does, and writes the same objects to a directory
// for the in-process renders.
func floorCluster(b *testing.B, cp *kubetest.ControlPlane, custom int) string {
	applyCluster(b, cp, clusterDir(b, "aws"))
	dir := b.TempDir()
	if err := os.CopyFS(dir, os.DirFS(clusterDir(b, "aws"))); err != nil {
		b.Fatal(err)
	}
	for i := range custom {
		name := fmt.Sprintf("custom-%03d", i)
		cp.Apply(b, poolObject(b, name), mcObject(b, "60-"+name, name, name))
		writeFile(b, dir, name+".machineconfigpool.yaml", mctest.Pool(name))
		writeFile(b, dir, "60-"+name+".yaml", mctest.MachineConfig("60-"+name, name, name))
	}
	return dir
}

func writeFile(b *testing.B, dir, name, data string) {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
		b.Fatal(err)
	}
}

// floorBody is one pool's writes: its rendered config's JSON as the
// controller sends it, and the pool's new configuration.
type floorBody struct {
	body    []byte
	name    string
	sources []any
}

// floorBodies renders every pool a worker edit with content changes, as
// the controller would, and returns each pool's writes.
func floorBodies(b *testing.B, cp *kubetest.ControlPlane, dir, content string) map[string]floorBody {
	writeFile(b, dir, "99-worker-bench.yaml", mctest.MachineConfig("99-worker-bench", "worker", content))
	set := servetest.Load(b, dir)
	l, err := cp.Dynamic.Resource(kube.MachineConfigPools).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]floorBody{}
	for i := range l.Items {
		p := &l.Items[i]
		if p.GetName() == "master" {
			continue // a worker edit leaves it alone
		}
		res, err := set.RenderPool(p.GetName(), render.Options{})
		if err != nil {
			b.Fatal(err)
		}
		body, err := renderedBody(res, p)
		if err != nil {
			b.Fatal(err)
		}
		out[p.GetName()] = floorBody{body: body, name: res.Name, sources: sourceRefs(res.MachineConfigs)}
	}
	return out
}

// floorWorkers is the controller's default Config.Workers.
const floorWorkers = 16

// floorClient writes as the controller does, without a rate limit.
type floorClient struct {
	w    *writer
	kube kubernetes.Interface
}

func floorWriter(b *testing.B, cp *kubetest.ControlPlane) *floorClient {
	rc := rest.CopyConfig(cp.Admin)
	rc.QPS, rc.Burst = -1, 0
	raw, err := rawClient(rc)
	if err != nil {
		b.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	return &floorClient{w: &writer{raw: raw, dyn: dyn}, kube: kc}
}

// write creates each pool's rendered config, then points the pool at it
// and records its Event, Workers pools at a time.
func (f *floorClient) write(b *testing.B, bodies map[string]floorBody) {
	ctx := context.Background()
	pools := make(chan string)
	var wg sync.WaitGroup
	workers := floorWorkers
	if n, err := strconv.Atoi(os.Getenv("MCS_FLOOR_WORKERS")); err == nil && n > 0 {
		workers = n
	}
	for range workers {
		wg.Go(func() {
			for pool := range pools {
				if err := f.writePool(ctx, pool, bodies[pool]); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for pool := range bodies {
		pools <- pool
	}
	close(pools)
	wg.Wait()
}

func (f *floorClient) writePool(ctx context.Context, pool string, fb floorBody) error {
	if _, err := f.w.create(ctx, fb.body); err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"configuration": map[string]any{"name": fb.name, "source": fb.sources}}})
	if _, err := f.w.dyn.Resource(kube.MachineConfigPools).Patch(ctx, pool, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return err
	}
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: pool + ".", Namespace: metav1.NamespaceDefault},
		InvolvedObject: corev1.ObjectReference{APIVersion: render.APIVersion, Kind: render.KindMachineConfigPool, Name: pool},
		Reason:         "RenderedConfigGenerated", Message: fb.name + " successfully generated", Type: eventNormal,
		Source: corev1.EventSource{Component: eventComponent}, FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
	}
	_, err := f.kube.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

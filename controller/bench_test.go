package controller

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/syncbuf"
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

// BenchmarkEditToPointed is the time from a MachineConfig edit to every
// pool it changes pointing at its new rendered config, through the binary
// as deployed (`mcs controller --kubeconfig F`, the default flags, its own
// process), on realdata (aws) with N custom pools that take the worker
// configs: a worker MachineConfig edit re-renders N+1 pools. Ten edits each;
// reported: the median and worst of the last pool's time, a one-pool edit
// (a custom pool's own MachineConfig), and the controller's RSS after.
func BenchmarkEditToPointed(b *testing.B) {
	bin := buildMCS(b)
	for _, custom := range []int{18, 100} {
		b.Run(fmt.Sprintf("pools=%d", custom+2), func(b *testing.B) {
			cp := needControlPlane(b)
			applyCluster(b, cp, clusterDir(b, "aws"))
			affected := []string{"worker"}
			for i := range custom {
				name := fmt.Sprintf("custom-%03d", i)
				affected = append(affected, name)
				cp.Apply(b, poolObject(b, name), mcObject(b, "60-"+name, name, name))
			}
			cp.Apply(b, mcObject(b, "99-worker-bench", "worker", "start"))
			proc := startBinary(b, cp, bin)
			kubetest.Eventually(b, 5*time.Minute, "every pool rendered", func() error { return allPointed(cp, custom+2) })
			pn := watchPools(b, cp)
			var all, one []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for e := range 10 {
					all = append(all, edit(b, cp, pn, mcObject(b, "99-worker-bench", "worker", fmt.Sprint(i, "-", e)), affected))
					one = append(one, edit(b, cp, pn, mcObject(b, "60-custom-000", "custom-000", fmt.Sprint(i, "-", e)), affected[1:2]))
				}
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(percentile(all, 0.5)), "median-ms")
			b.ReportMetric(ms(slices.Max(all)), "worst-ms")
			b.ReportMetric(ms(percentile(one, 0.5)), "one-pool-median-ms")
			b.ReportMetric(float64(rss(b, proc.Pid))/(1<<20), "rss-MB")
		})
	}
}

// edit applies obj and returns when the last of pools points at a new config.
func edit(b *testing.B, cp *kubetest.ControlPlane, pn *poolNames, obj *unstructured.Unstructured, pools []string) time.Duration {
	start := time.Now()
	cp.Apply(b, obj)
	var last time.Duration
	for _, at := range pn.until(b, pools, time.Minute) {
		last = max(last, at.Sub(start))
	}
	return last
}

func allPointed(cp *kubetest.ControlPlane, n int) error {
	l, err := cp.Dynamic.Resource(kube.MachineConfigPools).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range l.Items {
		if configuration(&l.Items[i]) == "" {
			return fmt.Errorf("%s not yet", l.Items[i].GetName())
		}
	}
	if len(l.Items) != n {
		return fmt.Errorf("%d pools", len(l.Items))
	}
	return nil
}

// buildMCS builds cmd/mcs as `make build` does.
func buildMCS(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "mcs")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/mcs")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startBinary runs `mcs controller` with a kubeconfig for an admin user of
// the control plane, as a user runs it: no flag but where to listen.
func startBinary(b *testing.B, cp *kubetest.ControlPlane, bin string) *os.Process {
	b.Helper()
	kubeconfig := cp.Kubeconfig(b, "bench")
	cmd := exec.Command(bin, "controller", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0", "--lease-name", leaseName(b), "--log-level", "warn")
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if b.Failed() {
			b.Logf("mcs controller:\n%s", stderr.String())
		}
	})
	return cmd.Process
}

// rss is a process's resident set size in bytes.
func rss(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

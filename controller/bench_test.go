package controller

import (
	"context"
	"fmt"
	"io"
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
// (a custom pool's own MachineConfig; at 2 pools, the worker edit, which
// changes only the worker pool), and the controller's RSS after.
func BenchmarkEditToPointed(b *testing.B) {
	bin := buildMCS(b)
	for _, custom := range []int{0, 18, 100} {
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
			r := editLoop(b, cp, proc.Pid, affected)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(percentile(r.all, 0.5)), "median-ms")
			b.ReportMetric(ms(slices.Max(r.all)), "worst-ms")
			b.ReportMetric(ms(percentile(r.one, 0.5)), "one-pool-median-ms")
			for name, t := range r.cpu {
				b.ReportMetric(ms(t)/float64(len(r.all)), name+"-cpu-ms/edit")
			}
			b.ReportMetric(float64(rss(b, proc.Pid))/(1<<20), "rss-MB")
			b.ReportMetric(leaseTransitions(b, cp, leaseName(b)), "lease-transitions")
		})
	}
}

type editTimes struct {
	all, one []time.Duration          // worker edits, one-pool edits
	cpu      map[string]time.Duration // per process, over the worker edits
}

// editLoop edits a worker MachineConfig (every pool of affected changes)
// and then one custom pool's own, ten times per b.N, and returns how long
// each took until its pools pointed, and the CPU the worker edits cost.
func editLoop(b *testing.B, cp *kubetest.ControlPlane, pid int, affected []string) editTimes {
	pn := watchPools(b, cp)
	r := editTimes{cpu: map[string]time.Duration{}}
	stopProfiles := profile(b, cp, len(affected)+1)
	defer stopProfiles()
	b.ResetTimer()
	defer b.StopTimer()
	for i := 0; i < b.N; i++ {
		for e := range 10 {
			before := cpuTimes(b, pid)
			r.all = append(r.all, edit(b, cp, pn, mcObject(b, "99-worker-bench", "worker", fmt.Sprint(i, "-", e)), affected))
			for name, t := range cpuTimes(b, pid) {
				r.cpu[name] += t - before[name]
			}
			if len(affected) == 1 {
				r.one = r.all // the worker pool alone
				continue
			}
			r.one = append(r.one, edit(b, cp, pn, mcObject(b, "60-custom-000", "custom-000", fmt.Sprint(i, "-", e)), affected[1:2]))
		}
	}
	return r
}

// edit applies obj and returns when the last of pools points at a new config.
func edit(b *testing.B, cp *kubetest.ControlPlane, pn *poolNames, obj *unstructured.Unstructured, pools []string) time.Duration {
	start := time.Now()
	cp.Apply(b, obj)
	applied := time.Now()
	var last time.Duration
	for _, at := range pn.until(b, pools, time.Minute) {
		last = max(last, at.Sub(start))
	}
	if profileDir != "" {
		b.Logf("edit of %s at %s (applied after %s): the last of %d pools pointed after %s",
			obj.GetName(), start.UTC().Format(time.RFC3339Nano), applied.Sub(start), len(pools), last)
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
	args := []string{"build", "-o", bin}
	if profileDir != "" {
		args = append(args, "-tags", "pprof")
	}
	cmd := exec.Command("go", append(args, "../cmd/mcs")...)
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
	level := "warn"
	var stderr syncbuf.Buffer
	var out io.Writer = &stderr
	if profileDir != "" {
		// Every write logged, with its time, beside the profiles.
		level = "debug"
		f, err := os.Create(filepath.Join(profileDir, leaseName(b)+".log"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		out = io.MultiWriter(&stderr, f)
	}
	cmd := exec.Command(bin, "controller", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0", "--lease-name", leaseName(b), "--log-level", level)
	if profileDir != "" {
		cmd.Env = append(os.Environ(), "MCS_PPROF="+pprofAddr())
	}
	cmd.Stderr = out
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

package controller

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/internal/kubetest"
)

// With MCS_BENCH_PROFILE=DIR, BenchmarkEditToPointed builds the binary with
// -tags pprof and, over the first MCS_BENCH_PROFILE_SECONDS (default 20) of
// the edits, writes to DIR a CPU profile and an execution trace of the
// controller and a CPU profile of the kube-apiserver: where an edit's time
// goes, on both sides of the API. BenchmarkWritesFloor writes the
// kube-apiserver's.
var profileDir = os.Getenv("MCS_BENCH_PROFILE")

// pprofAddr is the controller's MCS_PPROF address when profiling.
var pprofAddr = sync.OnceValue(func() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
})

func profile(b *testing.B, cp *kubetest.ControlPlane, pools int) (wait func()) {
	if profileDir == "" {
		return func() {}
	}
	secs := profileSeconds()
	ctl := "http://" + pprofAddr()
	get := []struct{ file, url string }{
		{"controller.cpu", fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", ctl, secs)},
		{"controller.trace", fmt.Sprintf("%s/debug/pprof/trace?seconds=%d", ctl, min(secs, 5))},
	}
	var wg sync.WaitGroup
	for _, g := range get {
		file := filepath.Join(profileDir, fmt.Sprintf("pools%d-%s", pools, g.file))
		wg.Go(func() {
			if err := fetchTo(http.DefaultClient, g.url, file); err != nil {
				b.Errorf("profile: %v", err)
			}
		})
	}
	api := apiserverProfile(b, cp, fmt.Sprintf("pools%d", pools))
	return func() { wg.Wait(); api() }
}

// apiserverProfile writes a CPU profile of kube-apiserver to DIR over the
// first MCS_BENCH_PROFILE_SECONDS, for benchmarks without a controller.
func apiserverProfile(b *testing.B, cp *kubetest.ControlPlane, name string) (wait func()) {
	if profileDir == "" {
		return func() {}
	}
	api, err := rest.HTTPClientFor(cp.Admin)
	if err != nil {
		b.Fatal(err)
	}
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(cp.Admin.Host, "/"), profileSeconds())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := fetchTo(api, url, filepath.Join(profileDir, name+"-apiserver.cpu")); err != nil {
			b.Errorf("profile: %v", err)
		}
	})
	return wg.Wait
}

func profileSeconds() int {
	if s, err := strconv.Atoi(os.Getenv("MCS_BENCH_PROFILE_SECONDS")); err == nil && s > 0 {
		return s
	}
	return 20
}

func fetchTo(client *http.Client, url, file string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cpuTimes are the CPU times used so far by the controller and by this
// process's kube-apiserver and etcd: what an edit costs, whatever share of
// the cores the machine's other work leaves it.
func cpuTimes(b *testing.B, controller int) map[string]time.Duration {
	out := map[string]time.Duration{"controller": procCPU(b, controller)}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		f := statFields(stat)
		if len(f) < 15 || f[3] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if name := strings.Trim(f[1], "()"); name == "kube-apiserver" || name == "etcd" {
			pid, _ := strconv.Atoi(f[0])
			out[name] = procCPU(b, pid)
		}
	}
	return out
}

// statFields splits /proc/PID/stat; the command (field 2) has no spaces here.
func statFields(stat []byte) []string { return strings.Fields(string(stat)) }

// procCPU is a process's user and system time (clock ticks of 10ms).
func procCPU(b *testing.B, pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := statFields(stat)
	utime, _ := strconv.ParseInt(f[13], 10, 64)
	stime, _ := strconv.ParseInt(f[14], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// leaseTransitions is how often the Lease changed hands: a leader that
// lost it while writing shows here.
func leaseTransitions(b *testing.B, cp *kubetest.ControlPlane, name string) float64 {
	l := kubetest.Get(b, cp.Kube.CoordinationV1().Leases("mcs"), name)
	if l.Spec.LeaseTransitions == nil {
		return 0
	}
	return float64(*l.Spec.LeaseTransitions)
}

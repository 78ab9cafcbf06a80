// Command scale measures how mcs's memory and render times grow with the number of pools.
//
// For each N it copies a MachineConfig tree (realdata/aws by default), adds N
// custom pools (each selecting role worker plus its own role, with one
// MachineConfig of its own: a file and a kernel argument), starts the mcs
// binary on it and reports: RSS after the first render (once the server is
// idle), time to ready, the time from an edit of one custom pool's
// MachineConfig to its new bytes being served, and the time from an edit of a
// worker MachineConfig (selected by every pool but master) to every pool
// serving new bytes, each edit made once the server is idle; and the CPU
// time to ready and for the worker edit. Everything runs on loopback and is
// stopped on exit.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ignition-mcs/mcs/internal/procstat"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

type options struct {
	mcs     string
	tree    string
	counts  []int
	poll    time.Duration
	timeout time.Duration
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	var o options
	var counts, write string
	fs.StringVar(&o.mcs, "mcs", "bin/mcs", "the mcs binary to measure")
	fs.StringVar(&o.tree, "tree", "../shared/realdata/aws", "the MachineConfig tree the custom pools are added to")
	fs.StringVar(&counts, "n", "10,50,100", "numbers of custom pools, comma-separated")
	fs.DurationVar(&o.poll, "poll", 50*time.Millisecond, "mcs's --poll (the edit is seen within it)")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "limit for each step")
	fs.StringVar(&write, "write", "", "only write the tree with the first -n custom pools to this new directory (the load test serves it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, s := range strings.Split(counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-n: %q is not a positive number", s)
		}
		o.counts = append(o.counts, n)
	}
	if write != "" {
		if err := os.MkdirAll(write, 0o755); err != nil {
			return err
		}
		return generate(o.tree, write, o.counts[0])
	}
	fmt.Fprintf(stdout, "%-6s %-10s %-10s %-12s %-14s %-14s %-14s %-14s\n", "pools", "RSS MiB", "peak MiB", "first (s)", "one pool (ms)", "all pools (ms)",
		"first CPU (s)", "all CPU (s)")
	for _, n := range o.counts {
		r, err := measure(o, n)
		if err != nil {
			return fmt.Errorf("%d custom pools: %w", n, err)
		}
		fmt.Fprintf(stdout, "%-6d %-10.0f %-10.0f %-12.2f %-14.0f %-14.0f %-14.2f %-14.2f\n", n+2, r.rssMiB, r.peakMiB,
			r.first.Seconds(), ms(r.onePool), ms(r.allPools), r.firstCPU.Seconds(), r.allCPU.Seconds())
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

type result struct {
	rssMiB, peakMiB          float64
	first, onePool, allPools time.Duration
	// CPU time mcs used to get ready, and for the worker edit: what the
	// wall times would be on idle cores, give or take parallelism, on a
	// machine other work shares.
	firstCPU, allCPU time.Duration
}

func measure(o options, n int) (*result, error) {
	dir, err := os.MkdirTemp("", "mcs-scale-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := generate(o.tree, dir, n); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*o.timeout)
	defer cancel()
	srv, err := start(ctx, o, dir)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	r := &result{first: srv.ready}
	if r.firstCPU, err = procstat.CPU(srv.cmd.Process.Pid); err != nil {
		return nil, err
	}
	// Work a server does after it is ready (specs encoded in the
	// background) must not land in the next step's time, nor be missed
	// by its RSS.
	if err := settle(srv.cmd.Process.Pid, o.timeout); err != nil {
		return nil, err
	}
	if r.rssMiB, r.peakMiB, err = rss(srv.cmd.Process.Pid); err != nil {
		return nil, err
	}

	pools := []string{"worker"}
	for i := range n {
		pools = append(pools, customName(i))
	}
	before, err := srv.etags(pools)
	if err != nil {
		return nil, err
	}
	// One custom pool's MachineConfig changed: only that pool's bytes change.
	t0 := time.Now()
	if err := writeCustomMC(dir, 0, "edited"); err != nil {
		return nil, err
	}
	if err := srv.waitChanged(pools[1:2], before, o.timeout); err != nil {
		return nil, err
	}
	r.onePool = time.Since(t0)

	if err := settle(srv.cmd.Process.Pid, o.timeout); err != nil {
		return nil, err
	}
	before, err = srv.etags(pools)
	if err != nil {
		return nil, err
	}
	// A worker MachineConfig changed: every pool but master changes.
	cpu0, err := procstat.CPU(srv.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	t0 = time.Now()
	if err := writeWorkerMC(dir, "edited"); err != nil {
		return nil, err
	}
	if err := srv.waitChanged(pools, before, o.timeout); err != nil {
		return nil, err
	}
	r.allPools = time.Since(t0)
	cpu1, err := procstat.CPU(srv.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	r.allCPU = cpu1 - cpu0
	_, peak, err := rss(srv.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	r.peakMiB = peak
	return r, nil
}

// server is a running mcs.
type server struct {
	cmd   *exec.Cmd
	url   string
	ready time.Duration
}

func start(ctx context.Context, o options, dir string) (*server, error) {
	cmd := exec.CommandContext(ctx, o.mcs, "--dir", dir, "--listen-plain", "127.0.0.1:0", "--listen-tls", "",
		"--poll", o.poll.String(), "--debounce", "10ms", "--log-level", "warn")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd}
	addr := regexp.MustCompile(`http://\S+`)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := addr.FindString(sc.Text()); m != "" {
			s.url = m
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	if s.url == "" {
		s.stop()
		return nil, errors.New("mcs printed no listening address")
	}
	deadline := time.Now().Add(o.timeout)
	for {
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("not ready after %s", o.timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.ready = time.Since(t0)
	return s, nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// etags asks for each pool as Ignition v2.27 would and returns the ETags.
func (s *server) etags(pools []string) (map[string]string, error) {
	out := make(map[string]string, len(pools))
	for _, p := range pools {
		req, _ := http.NewRequest(http.MethodHead, s.url+"/config/"+p, nil)
		req.Header.Set("Accept", "application/vnd.coreos.ignition+json;version=3.5.0, */*;q=0.1")
		req.Header.Set("User-Agent", "Ignition/v2.27.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("HEAD /config/%s: %s", p, resp.Status)
		}
		out[p] = resp.Header.Get("ETag")
	}
	return out, nil
}

// waitChanged polls until every pool's ETag differs from before.
func (s *server) waitChanged(pools []string, before map[string]string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	pending := append([]string(nil), pools...)
	for len(pending) > 0 {
		now, err := s.etags(pending)
		if err != nil {
			return err
		}
		var still []string
		for _, p := range pending {
			if now[p] == before[p] {
				still = append(still, p)
			}
		}
		pending = still
		if len(pending) > 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("%d pools (%s, …) still serve the old bytes after %s", len(pending), pending[0], limit)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return nil
}

// rss returns the process's resident and peak resident memory in MiB.
func rss(pid int) (cur, peak float64, err error) {
	c, p, err := procstat.Memory(pid)
	return float64(c) / (1 << 20), float64(p) / (1 << 20), err
}

// settle waits until the process is idle: under 10 % of a core over a
// quarter second (its poll of the tree costs a few percent).
func settle(pid int, timeout time.Duration) error {
	const window = 250 * time.Millisecond
	last, err := procstat.CPU(pid)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); {
		time.Sleep(window)
		now, err := procstat.CPU(pid)
		if err != nil {
			return err
		}
		if now-last < window/10 {
			return nil
		}
		last = now
	}
	return fmt.Errorf("still busy after %s", timeout)
}

func customName(i int) string { return fmt.Sprintf("custom-%03d", i) }

// generate copies tree into dir and adds n custom pools.
func generate(tree, dir string, n int) error {
	entries, err := os.ReadDir(tree)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(tree, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	if err := writeWorkerMC(dir, "initial"); err != nil {
		return err
	}
	for i := range n {
		name := customName(i)
		pool := fmt.Sprintf(`apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: %[1]s
spec:
  machineConfigSelector:
    matchExpressions:
    - key: machineconfiguration.openshift.io/role
      operator: In
      values: [worker, %[1]s]
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/%[1]s: ""
`, name)
		if err := os.WriteFile(filepath.Join(dir, name+".machineconfigpool.yaml"), []byte(pool), 0o644); err != nil {
			return err
		}
		if err := writeCustomMC(dir, i, "initial"); err != nil {
			return err
		}
	}
	return nil
}

// writeCustomMC writes custom pool i's own MachineConfig, atomically (a
// rename), as a GitOps tool or a ConfigMap update would.
func writeCustomMC(dir string, i int, tag string) error {
	name := customName(i)
	mc := fmt.Sprintf(`apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-%[1]s
  labels:
    machineconfiguration.openshift.io/role: %[1]s
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
      - path: /etc/%[1]s.conf
        mode: 420
        contents: {source: "data:,%[1]s%%20%[2]s"}
  kernelArguments: [%[1]s=%[2]s]
`, name, tag)
	return writeAtomic(filepath.Join(dir, "50-"+name+".yaml"), []byte(mc))
}

// writeWorkerMC writes a MachineConfig of role worker, which every pool but
// master selects.
func writeWorkerMC(dir, tag string) error {
	mc := fmt.Sprintf(`apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 60-worker-scale
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
      - path: /etc/scale-worker.conf
        mode: 420
        contents: {source: "data:,%s"}
`, tag)
	return writeAtomic(filepath.Join(dir, "60-worker-scale.yaml"), []byte(mc))
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

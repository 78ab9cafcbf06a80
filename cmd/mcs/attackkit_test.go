//go:build attack

package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/internal/procstat"
	"github.com/ignition-mcs/mcs/internal/syncbuf"
)

// The attack suite runs the mcs binary in a network namespace of its own
// whose loopback has a real link's MTU (1500), so that the kernel's 64 KiB
// loopback segments and buffers do not absorb what a real network would
// not. The test binary re-executes itself there under `unshare --net`;
// nothing leaves the namespace, and it disappears with the process.
const inNetnsEnv = "MCS_ATTACK_NETNS"

// attackBinEnv names an mcs binary to attack instead of building this
// tree's: how docs/reliability.md's "before" column was measured.
const attackBinEnv = "MCS_ATTACK_BIN"

// Addresses on the namespace's loopback: nodes fetch from one, the
// attacker connects from another.
const (
	nodeAddr     = "127.0.0.2"
	attackerAddr = "127.0.0.3"
)

// inNetns runs the calling test again in a new network namespace and
// reports whether the caller is that run. Outside it, it returns false
// after the inner run ended (failing the test if the inner run failed), or
// skips when namespaces cannot be made (fails under CI=true).
func inNetns(t *testing.T) bool {
	if os.Getenv(inNetnsEnv) == "1" {
		if out, err := exec.Command("ip", "link", "set", "lo", "mtu", "1500", "up").CombinedOutput(); err != nil {
			t.Fatalf("ip link set lo: %v: %s", err, out)
		}
		return true
	}
	if out, err := exec.Command("unshare", "--net", "true").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot make a network namespace (unshare --net: %v: %s)", err, out)
		}
		t.Skipf("cannot make a network namespace: %v: %s", err, out)
	}
	bin := attackBinary(t)
	run := "^" + t.Name() + "$"
	if f := flag.Lookup("test.run"); f != nil && strings.Contains(f.Value.String(), "/") {
		run = f.Value.String()
	}
	cmd := exec.Command("unshare", "--net", "--", os.Args[0], "-test.run", run, "-test.v", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), inNetnsEnv+"=1", attackBinEnv+"="+bin)
	out, err := cmd.CombinedOutput()
	t.Logf("in a network namespace:\n%s", out)
	if err != nil {
		t.Fatalf("the attack run failed: %v", err)
	}
	return false
}

// attackBinary is $MCS_ATTACK_BIN, or this tree's mcs built for the test.
func attackBinary(t *testing.T) string {
	if b := os.Getenv(attackBinEnv); b != "" {
		return b
	}
	bin := filepath.Join(t.TempDir(), "mcs")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// proc is an mcs process under attack.
type proc struct {
	cmd       *exec.Cmd
	plain     string // http://host:port
	tls       string // https://host:port, when listening
	logs      *logTap
	exited    chan struct{}
	listening chan struct{}
}

// logTap counts the bytes mcs logs and keeps the first of them.
type logTap struct {
	mu    sync.Mutex
	total int64
	lines int64
	kept  []byte
}

const logKept = 4 << 20

func (l *logTap) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total += int64(len(b))
	for _, c := range b {
		if c == '\n' {
			l.lines++
		}
	}
	if room := logKept - len(l.kept); room > 0 {
		l.kept = append(l.kept, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

// counts is how many bytes and lines were logged so far.
func (l *logTap) counts() (bytes, lines int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.lines
}

func (l *logTap) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.kept)
}

var listeningOn = regexp.MustCompile(`listening on (https?)://(\S+)`)

// startMCS runs the binary under attack with args after its listeners on
// the namespace's loopback (and --dir dir, unless dir is ""), and waits
// until it is ready. prefix,
// when set, runs it under a command (prlimit).
func startMCS(t *testing.T, dir string, prefix []string, args ...string) *proc {
	t.Helper()
	argv := append(slices.Clone(prefix), os.Getenv(attackBinEnv), "--listen-plain", "127.0.0.1:0")
	if dir != "" {
		argv = append(argv, "--dir", dir)
	}
	wantTLS := slices.Contains(args, "--listen-tls")
	if !wantTLS {
		argv = append(argv, "--listen-tls", "")
	}
	argv = append(argv, args...)
	p := &proc{cmd: exec.Command(argv[0], argv[1:]...), logs: &logTap{}, exited: make(chan struct{}), listening: make(chan struct{})}
	p.cmd.Stderr = p.logs
	stdout, _ := p.cmd.StdoutPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.readStdout(stdout, wantTLS)
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("mcs log (first bytes):\n%.20000s", p.logs.String())
		}
	})
	select {
	case <-p.listening:
	case <-p.exited:
		t.Fatalf("mcs exited: %s", p.logs)
	case <-time.After(30 * time.Second):
		t.Fatal("mcs did not listen")
	}
	waitFor(t, "ready", func() bool { c, _, _ := p.fetch(http.DefaultClient, "/readyz"); return c == 200 })
	return p
}

// stop ends the process (SIGTERM, then SIGKILL after 30 s) and returns
// once it has exited, its log read to the end.
func (p *proc) stop(t *testing.T) {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Logf("mcs did not stop within 30 s of SIGTERM: killed")
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// readStdout finds the listeners' addresses; listening closes once the
// plain one and, when wantTLS, the TLS one are known.
func (p *proc) readStdout(r io.Reader, wantTLS bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := listeningOn.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if m[1] == "https" {
			p.tls = "https://" + m[2]
		} else {
			p.plain = "http://" + m[2]
		}
		if p.plain != "" && (!wantTLS || p.tls != "") {
			close(p.listening)
			break
		}
	}
	io.Copy(io.Discard, r)
}

func (p *proc) fetch(c *http.Client, path string, header ...string) (int, []byte, error) {
	return getWith(c, p.plain+path, header...)
}

// cpu is the CPU time the process used so far.
func (p *proc) cpu(t *testing.T) time.Duration {
	d, err := procstat.CPU(p.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// memory is the process's resident set now and its peak since it started
// or since resetPeak, in bytes.
func (p *proc) memory(t *testing.T) (rss, peak int64) {
	rss, peak, err := procstat.Memory(p.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return rss, peak
}

// resetPeak has the kernel keep the process's peak resident set from now
// on: every moment counts, not only those a sampler would see.
func (p *proc) resetPeak(t *testing.T) {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.cmd.Process.Pid), []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
}

// hostPort is the plain listener's address.
func (p *proc) hostPort() string { return strings.TrimPrefix(p.plain, "http://") }

// client is an HTTP client whose connections come from src, each request
// cut after timeout.
func client(src string, timeout time.Duration) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: timeout}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}}
}

// bigTree is a source whose worker config is about size bytes, in several
// file contents (so served as several pieces) larger than socket buffers.
func bigTree(t *testing.T, size int) string {
	dir := t.TempDir()
	var files []mctest.File
	const parts = 4
	for i := range parts {
		files = append(files, mctest.File{Path: fmt.Sprintf("/etc/big-%d", i), Source: "data:," + strings.Repeat(strconv.Itoa(i), size/parts)})
	}
	writeFile(t, dir, "50-big.yaml", mctest.Config{Name: "50-big", Role: "worker", Files: files}.YAML())
	return dir
}

// nodes fetch /config/worker in a loop, as booting nodes would, for as
// long as they are run; each request counts as served only when it is a
// whole 200 within the timeout.
type nodes struct {
	served, failed    atomic.Int64
	mu                sync.Mutex
	latencies         []time.Duration
	firstErr, lastErr string
}

// runNodes has n nodes fetch from nodeAddr, one request after another, for
// d (a load test's length is time on the wall clock), and returns once the
// last request has ended.
func runNodes(p *proc, n int, timeout, d time.Duration, header ...string) *nodes {
	return runFetchers(n, d, func(ctx context.Context, ns *nodes, _ int) {
		c := client(nodeAddr, timeout)
		for ctx.Err() == nil {
			ns.record(p.fetchTimed(c, header))
		}
	})
}

// runFetchers runs fetch(ctx, ns, i) for i in [0, n) at once, ctx ending
// after d, and returns ns once every fetch has returned.
func runFetchers(n int, d time.Duration, fetch func(ctx context.Context, ns *nodes, i int)) *nodes {
	ns := &nodes{}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fetch(ctx, ns, i) })
	}
	wg.Wait()
	return ns
}

func (p *proc) fetchTimed(c *http.Client, header []string) (time.Duration, error) {
	start := time.Now()
	code, _, err := p.fetch(c, "/config/worker", header...)
	if err == nil && code != 200 {
		err = fmt.Errorf("status %d", code)
	}
	return time.Since(start), err
}

func (ns *nodes) record(d time.Duration, err error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if err != nil {
		ns.failed.Add(1)
		if ns.firstErr == "" {
			ns.firstErr = err.Error()
		}
		ns.lastErr = err.Error()
		return
	}
	ns.served.Add(1)
	ns.latencies = append(ns.latencies, d)
}

// report is the share served and the latency percentiles of what was.
func (ns *nodes) report() (share float64, summary string) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, f := ns.served.Load(), ns.failed.Load()
	if s+f > 0 {
		share = float64(s) / float64(s+f)
	}
	slices.Sort(ns.latencies)
	return share, fmt.Sprintf("%d served, %d failed (%.1f%% served); p50 %v, p99 %v; first error %q, last %q",
		s, f, 100*share, percentile(ns.latencies, 50), percentile(ns.latencies, 99), ns.firstErr, ns.lastErr)
}

// percentile of sorted durations.
func percentile(sorted []time.Duration, pct int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*pct/100)].Round(10 * time.Microsecond)
}

// slowReaders keeps n connections from attackerAddr that each send one
// request and never read the reply (a 4 KiB receive buffer: nothing is
// absorbed), opening a new one whenever the server closes one, until
// stopped.
//
// The attacker is a process of its own (this test binary again, see
// TestMain), as it would be another machine: its n goroutines, reconnecting
// thousands of times a second, once shared this process's scheduler with
// the nodes' 8 and, under -race on a loaded machine, left them waiting
// seconds to run (p50 6.8 s at load 17), which counted against the server.
func slowReaders(t *testing.T, p *proc, n int, request string) *attack {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), slowReadersEnv+"="+strconv.Itoa(n), "MCS_ATTACK_ADDR="+p.hostPort(), "MCS_ATTACK_REQUEST="+request)
	return startAttacker(t, cmd)
}

// attack is an attacker process.
type attack struct {
	// stop stops the attacker and reports how many connections it opened.
	stop  func() int64
	ready chan struct{} // closed when the attacker says it is at full strength
}

// attackerReady is the line an attacker prints once each of its
// connection loops has opened a connection and sent its request.
const attackerReady = "ready"

// startAttacker runs cmd, this test binary as an attacker (see TestMain),
// until stop.
func startAttacker(t *testing.T, cmd *exec.Cmd) *attack {
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut syncbuf.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &attack{ready: make(chan struct{})}
	var opened int64
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == attackerReady {
				close(a.ready)
			} else {
				opened, _ = strconv.ParseInt(sc.Text(), 10, 64)
			}
		}
		exited <- cmd.Wait() // once stdout is read to its end
	}()
	var once sync.Once
	a.stop = func() int64 {
		once.Do(func() {
			in.Close() // the attacker stops when its stdin closes
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("the attacker: %v: %s", err, errOut.String())
				}
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				<-exited
				t.Errorf("the attacker did not stop: %s", errOut.String())
			}
		})
		return opened
	}
	t.Cleanup(func() { a.stop() })
	return a
}

// atFullStrength waits until each of the attacker's connection loops has
// opened a connection and sent its request.
func (a *attack) atFullStrength(t *testing.T) {
	t.Helper()
	select {
	case <-a.ready:
	case <-time.After(time.Minute):
		t.Fatal("the attacker was not at full strength within a minute")
	}
}

// slowReadersEnv makes this test binary the slow-reader attacker, with that
// many connections to $MCS_ATTACK_ADDR each sending $MCS_ATTACK_REQUEST.
const slowReadersEnv = "MCS_ATTACK_SLOW_READERS"

func TestMain(m *testing.M) {
	addr := os.Getenv("MCS_ATTACK_ADDR")
	if n, err := strconv.Atoi(os.Getenv(slowReadersEnv)); err == nil {
		runAttacker(func(ctx context.Context) int64 { return attackSlowly(ctx, n, addr, os.Getenv("MCS_ATTACK_REQUEST")) })
	}
	if spec := os.Getenv(rateReadersEnv); spec != "" {
		runAttacker(func(ctx context.Context) int64 { return readAtRate(ctx, spec, addr) })
	}
	os.Exit(m.Run())
}

// runAttacker runs attack until stdin closes, prints how many connections
// it opened and exits.
func runAttacker(attack func(context.Context) int64) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { io.Copy(io.Discard, os.Stdin); cancel() }()
	fmt.Println(attack(ctx))
	os.Exit(0)
}

// loops runs n connection loops, each calling connect for a connection
// until ctx ends and then holding it, and returns how many connections
// they opened. Once every loop has had its first, it prints attackerReady.
func loops(ctx context.Context, n int, connect func(ctx context.Context, i int) net.Conn, hold func(ctx context.Context, c net.Conn)) int64 {
	var opened atomic.Int64
	var first, wg sync.WaitGroup
	first.Add(n)
	go func() { first.Wait(); fmt.Println(attackerReady) }()
	for i := range n {
		wg.Go(func() {
			firstDone := sync.OnceFunc(first.Done)
			for ctx.Err() == nil {
				c := connect(ctx, i)
				if c == nil {
					continue
				}
				opened.Add(1)
				firstDone()
				hold(ctx, c)
				c.Close()
			}
		})
	}
	wg.Wait()
	return opened.Load()
}

// dialAgain dials addr with d, waiting a little after a failure (the
// attacker's own pace, on the wall clock, as another machine's would be),
// and sends request; it returns nil when it failed or ctx ended.
func dialAgain(ctx context.Context, d *net.Dialer, addr, request string) net.Conn {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		return nil
	}
	io.WriteString(c, request)
	return c
}

// attackSlowly is the slow readers' loop, until ctx ends; it returns how
// many connections it opened.
func attackSlowly(ctx context.Context, n int, addr, request string) int64 {
	d := attackDialer(net.ParseIP(attackerAddr))
	return loops(ctx, n, func(ctx context.Context, _ int) net.Conn { return dialAgain(ctx, d, addr, request) }, holdUntilClosed)
}

// attackDialer dials from src with a 4 KiB receive buffer: nothing of a
// response is absorbed beyond what the attacker reads.
func attackDialer(src net.IP) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: 5 * time.Second,
		Control: func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096) })
		}}
}

// holdUntilClosed holds c, reading nothing, until ctx ends or the server
// has closed its side (seen in the socket's TCP state, which needs no read).
func holdUntilClosed(ctx context.Context, c net.Conn) {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return
	}
	for established(rc) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// established says whether the socket's TCP state is still ESTABLISHED.
func established(rc syscall.RawConn) bool {
	open := false
	rc.Control(func(fd uintptr) {
		info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		open = err == nil && info.State == unix.BPF_TCP_ESTABLISHED
	})
	return open
}

// metric is the value of the first sample of /metrics starting with name.
func (p *proc) metric(t *testing.T, name string) float64 {
	_, b, err := p.fetch(http.DefaultClient, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return sampleOf(string(b), name)
}

// sampleOf is the value of the first sample of a scrape starting with
// name, -1 when there is none.
func sampleOf(scrape, name string) float64 {
	for _, line := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			return v
		}
	}
	return -1
}

// mib formats bytes.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

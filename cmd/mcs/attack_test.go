//go:build attack

package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/testpki"
)

// What a client on the cluster network can do to mcs with default flags,
// each against the binary in a network namespace (see inNetns); each
// subtest logs what the attack cost, the numbers docs/reliability.md gives.
func TestAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("the attack suite takes about two minutes")
	}
	if !inNetns(t) {
		return
	}
	t.Run("SlowReaders", attackSlowReaders)
	t.Run("IdleConnections", attackIdleConnections)
	t.Run("LogFlood", attackLogFlood)
	t.Run("PrettyFlood", attackPrettyFlood)
	t.Run("BadCertificateReload", attackBadCertificate)
	t.Run("Smuggling", attackSmuggling)
	t.Run("Admit", attackAdmit)
	t.Run("NodeFailures", attackNodeFailures)
	t.Run("NodeFailureUnknownPool", attackNodeFailureUnknownPool)
	t.Run("TokenFiles", attackTokenFiles)
	t.Run("HugeLogValues", attackHugeLogValues)
}

const specAccept = "application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1"

// 1,100 connections from one address each ask for a 1 MiB config and never
// read it, reconnecting whenever mcs closes one, while 8 nodes fetch from
// another address: at least 90% of the nodes' requests are served, and
// mcs's memory stays bounded.
func attackSlowReaders(t *testing.T) {
	p := startMCS(t, bigTree(t, 1<<20), nil)
	rss0, _ := p.memory(t)
	p.resetPeak(t)
	a := slowReaders(t, p, 1100, "GET /config/worker HTTP/1.1\r\nHost: mcs\r\nAccept: "+specAccept+"\r\n\r\n")
	a.atFullStrength(t)
	ns := runNodes(p, 8, 5*time.Second, 20*time.Second)
	_, peak := p.memory(t)
	opened := a.stop()
	share, summary := ns.report()
	t.Logf("slow readers: %d connections opened; nodes: %s; RSS %s before, peak %s during", opened, summary, mib(rss0), mib(peak))
	if share < 0.9 {
		t.Errorf("%.1f%% of the nodes' requests served, want at least 90%%", 100*share)
	}
	if peak-rss0 > 64<<20 {
		t.Errorf("RSS grew by %s under the attack, want at most 64 MiB", mib(peak-rss0))
	}
}

var connLines = regexp.MustCompile(`(?m)^.*(Accept error|accepting connections|connection refused).*$`)

// With 1,024 file descriptors, 3,000 connections from one address that
// send nothing: nodes are still served, and the log is not flooded with
// accept errors.
func attackIdleConnections(t *testing.T) {
	p := startMCS(t, bigTree(t, 64<<10), []string{"prlimit", "--nofile=1024:1024", "--"})
	_, lines0 := p.logs.counts()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 3000 {
		c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(attackerAddr)}, Timeout: time.Second}).Dial("tcp", p.hostPort())
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	ns := runNodes(p, 8, 5*time.Second, 15*time.Second)
	share, summary := ns.report()
	_, lines := p.logs.counts()
	accepts := len(connLines.FindAllString(p.logs.String(), -1))
	t.Logf("idle connections: %d opened; nodes: %s; %d log lines meanwhile, %d about accepting", len(conns), summary, lines-lines0, accepts)
	if share < 0.9 {
		t.Errorf("%.1f%% of the nodes' requests served, want at least 90%%", 100*share)
	}
	if accepts > 50 {
		t.Errorf("%d log lines about accepting connections, want a few", accepts)
	}
}

// Clients with 60 KB User-Agents and 2 KB Accept headers, half of them
// without the token: the log grows by a bounded amount per request.
func attackLogFlood(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte(s3cret+"\n"), 0o600)
	p := startMCS(t, bigTree(t, 4<<10), nil, "--auth-token-file", tokens)
	bytes0, _ := p.logs.counts()
	ua, accept := "Ignition/"+strings.Repeat("A", 60000), specAccept+","+strings.Repeat("x/y;q=0.1,", 200)
	var requests, refused atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(5 * time.Second)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client(nodeAddr, 5*time.Second)
			h := []string{"User-Agent", ua, "Accept", accept}
			if i%2 == 0 {
				h = append(h, "Authorization", "Bearer "+s3cret)
			}
			for time.Now().Before(deadline) {
				code, _, err := p.fetch(c, "/config/worker", h...)
				if err == nil {
					requests.Add(1)
				}
				if code == 511 {
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	p.stop(t) // the log is whole once mcs has exited
	bytes, _ := p.logs.counts()
	per := float64(bytes-bytes0) / float64(max(1, requests.Load()))
	t.Logf("log flood: %d requests (%d refused 511), %s logged, %.0f bytes per request", requests.Load(), refused.Load(), mib(bytes-bytes0), per)
	if requests.Load() < 100 {
		t.Fatalf("only %d requests made", requests.Load())
	}
	if per > 1024 {
		t.Errorf("%.0f log bytes per request, want at most 1 KiB", per)
	}
}

// 32 clients asking for ?pretty=1 cost mcs no more than 32 asking for the
// config itself: its CPU time per request within twice, and a node's p99
// within twice what it is then. The two floods alternate, four rounds of
// each, with two nodes fetching: one 8 s window of each, one node, compared
// the slowest of some 30 fetches each, which the loaded machine's other
// work decided as much as mcs (1.87 s against 0.76 s at load 25).
func attackPrettyFlood(t *testing.T) {
	p := startMCS(t, "../../fixtures/cluster", nil)
	normal, pretty := &flood{path: "/config/worker"}, &flood{path: "/config/worker?pretty=1"}
	for range 4 {
		normal.round(t, p)
		pretty.round(t, p)
	}
	t.Logf("flood of /config/worker: %s\nflood of ?pretty=1: %s", normal, pretty)
	if pretty.perRequest() > 2*normal.perRequest() {
		t.Errorf("a ?pretty=1 request costs %v of CPU, over twice the %v of a plain one", pretty.perRequest(), normal.perRequest())
	}
	if pretty.p99() > 2*normal.p99() {
		t.Errorf("a node's p99 is %v under a ?pretty=1 flood, over twice the %v under a flood of plain requests", pretty.p99(), normal.p99())
	}
}

// flood is what 32 clients fetching path cost, over its rounds.
type flood struct {
	path      string
	cpu       time.Duration // mcs's CPU time during the rounds
	requests  int64         // flood requests served then
	latencies []time.Duration
	served    int64
	failed    int64
}

func (f *flood) perRequest() time.Duration { return f.cpu / time.Duration(max(1, f.requests)) }

func (f *flood) p99() time.Duration {
	slices.Sort(f.latencies)
	return percentile(f.latencies, 99)
}

func (f *flood) String() string {
	slices.Sort(f.latencies)
	return fmt.Sprintf("%v of CPU a request; %d flood requests; nodes: %d served, %d failed; p50 %v, p99 %v",
		f.perRequest(), f.requests, f.served, f.failed, percentile(f.latencies, 50), f.p99())
}

// round runs 32 clients fetching f.path as fast as they can and, once the
// flood has had 64 answers, adds what the next 2 s cost and what two nodes
// fetching their config meanwhile saw.
func (f *flood) round(t *testing.T, p *proc) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	var flooded atomic.Int64
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client(attackerAddr, 5*time.Second)
			for !stop.Load() {
				if code, _, _ := p.fetch(c, f.path); code == 200 {
					flooded.Add(1)
				}
			}
		}()
	}
	waitFor(t, "the flood under way", func() bool { return flooded.Load() >= 64 })
	cpu0, n0 := p.cpu(t), flooded.Load()
	ns := runNodes(p, 2, 5*time.Second, 2*time.Second, "Accept", specAccept)
	f.cpu += p.cpu(t) - cpu0
	f.requests += flooded.Load() - n0
	stop.Store(true)
	wg.Wait()
	f.latencies = append(f.latencies, ns.latencies...)
	f.served += ns.served.Load()
	f.failed += ns.failed.Load()
}

// A certificate rotated into a mismatched pair: mcs says so (an ERROR
// naming both files, a metric, a /status condition) and keeps serving the
// old certificate.
func attackBadCertificate(t *testing.T) {
	tlsDir := t.TempDir()
	certFile, keyFile := filepath.Join(tlsDir, "tls.crt"), filepath.Join(tlsDir, "tls.key")
	ca := testpki.NewCA(t)
	a, b := ca.Serving(t), ca.Serving(t)
	installCert(t, certFile, keyFile, string(a.CertPEM), string(a.KeyPEM))
	p := startMCS(t, bigTree(t, 4<<10), nil, "--listen-tls", "127.0.0.1:0", "--cert", certFile, "--key", keyFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	serial := func() string {
		c, err := tls.Dial("tcp", strings.TrimPrefix(p.tls, "https://"), &tls.Config{RootCAs: pool, ServerName: "localhost"})
		if err != nil {
			return err.Error()
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	if s := serial(); s != a.Serial.String() {
		t.Fatalf("serving %s, want %s", s, a.Serial)
	}
	// b's certificate with a's key
	installCert(t, certFile, keyFile, string(b.CertPEM), string(a.KeyPEM))
	reported := func() bool {
		for _, line := range strings.Split(p.logs.String(), "\n") {
			if strings.Contains(line, "level=ERROR") && strings.Contains(line, certFile) && strings.Contains(line, keyFile) {
				return true
			}
		}
		return false
	}
	waitFor(t, "an ERROR naming both files", func() bool { serial(); return reported() })
	if s := serial(); s != a.Serial.String() {
		t.Errorf("serving %s after a bad rotation, want the old %s", s, a.Serial)
	}
	if v := p.metric(t, "mcs_tls_certificate_reload_failing"); v != 1 {
		t.Errorf("mcs_tls_certificate_reload_failing %v, want 1", v)
	}
	if _, st, _ := p.fetch(http.DefaultClient, "/status"); !strings.Contains(string(st), "CertificateReloadFailed") {
		t.Errorf("no CertificateReloadFailed condition in /status:\n%.2000s", st)
	}
}

// A request with both Content-Length and Transfer-Encoding (RFC 9112
// §6.1: smuggling behind a proxy that trusts Content-Length) is refused
// and its connection closed: what follows it is never read as a request.
func attackSmuggling(t *testing.T) {
	p := startMCS(t, bigTree(t, 4<<10), nil)
	c, err := net.Dial("tcp", p.hostPort())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /config/worker HTTP/1.1\r\nHost: mcs\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: mcs\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	answers := strings.Count(string(got), "HTTP/1.1 ")
	t.Logf("smuggling: %d answers, first line %q, read ended with %v", answers, strings.SplitN(string(got), "\r\n", 2)[0], err)
	if err != nil {
		t.Errorf("the connection was not closed: %v", err)
	}
	if answers != 1 || !strings.HasPrefix(string(got), "HTTP/1.1 400 ") {
		t.Errorf("want one 400 answer, got:\n%s", got)
	}
}

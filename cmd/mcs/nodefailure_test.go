package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/source/kube"
)

// A report whose error holds a pull secret's auth, a bearer token and a
// registry password in a URL, as a failing pull can print them.
const (
	pullSecretAuth = "a3ViZWFkbWluOnN1cGVyLXNlY3JldC1wdWxsLXRva2VuLTEyMzQ1Njc4OTA="
	bearerToken    = "sha256~Qm9ndXNUb2tlbkZvclRoZVRlc3Q"
	registryPass   = "Rob0tPassw0rd"
	failedReport   = `{"pool":"worker","nodeID":"ip-10-0-1-215","stage":"firstboot-update",
	  "imageURL":"https://robot:` + registryPass + `@quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0123",
	  "errorMessage":"error running podman pull --authfile /var/lib/kubelet/config.json: {\"auths\":{\"quay.io\":{\"auth\":\"` + pullSecretAuth + `\"}}} Authorization: Bearer ` + bearerToken + `"}`
)

// Against a real kube-apiserver: a node's report becomes one
// FirstbootFailed Event on its pool, redacted; a flood of 1,000 reports
// from one address stays that one Event (its count grown by the few
// within the address's limit), the server's state stays bounded
// and nodes' fetches are served throughout; a bad body is refused 400
// naming the field.
func TestNodeFailureReports(t *testing.T) {
	kubeconfig, dyn, apply := controlPlane(t, true)
	apply(kube.MachineConfigPools, mctest.RolePool("worker"))
	apply(kube.MachineConfigs, workerMC("one"))
	in := start(t, "--source", "kube", "--kubeconfig", kubeconfig, "--listen-plain", "127.0.0.1:0", "--listen-tls", "", "--debounce", "20ms")
	waitFor(t, "the worker pool served", func() bool { c, _, _ := in.get("/config/worker"); return c == 200 })
	host, _ := os.Hostname()

	first := time.Now() // the limiter refills from here
	if code, body := postReport(t, in.base, failedReport); code != http.StatusAccepted || !strings.Contains(body, "accepted") {
		t.Fatalf("a report: %d %s", code, body)
	}
	var ev *unstructured.Unstructured
	waitFor(t, "a FirstbootFailed Event on pool worker", func() bool {
		evs := firstbootEvents(t, dyn, host)
		if len(evs) == 1 {
			ev = evs[0]
		}
		return ev != nil
	})
	msg, _, _ := unstructured.NestedString(ev.Object, "message")
	typ, _, _ := unstructured.NestedString(ev.Object, "type")
	for _, secret := range []string{pullSecretAuth, bearerToken, registryPass, "robot"} {
		if strings.Contains(msg, secret) {
			t.Errorf("the Event shows %q: %s", secret, msg)
		}
	}
	if typ != "Warning" || !strings.HasPrefix(msg, "Node ip-10-0-1-215 failed during firstboot at stage 'firstboot-update': error running podman pull") ||
		!strings.Contains(msg, "[REDACTED]") || !strings.HasSuffix(msg, "(image: quay.io)") {
		t.Errorf("the Event: %s %q", typ, msg)
	}

	floodReports(t, in, dyn, host, first)
	failedPoolReport(t, in, dyn, host, apply)

	for body, field := range map[string]string{
		`{"nodeID":"n","stage":"firstboot-update"}`:    "pool",
		`{"pool":"worker","stage":"firstboot-update"}`: "nodeID",
		`{"pool":"worker","nodeID":"n","stage":7}`:     "stage",
		`not json`: "body",
	} {
		code, answer := postReport(t, in.base, body)
		var got map[string]string
		if code != http.StatusBadRequest || json.Unmarshal([]byte(answer), &got) != nil || got["field"] != field || !strings.HasPrefix(got["error"], field+": ") {
			t.Errorf("%s: %d %s, want 400 naming %s", body, code, answer, field)
		}
	}
}

// failedPoolReport: a report for a pool whose render failed (it exists) is
// taken under its own name, as a FirstbootFailed Event on it (issue 45
// item 9: it was counted as pool "other", with no Event). Sent from an
// address of its own: the flood spent 127.0.0.1's.
func failedPoolReport(t *testing.T, in *instance, dyn dynamic.Interface, host string, apply func(schema.GroupVersionResource, string)) {
	t.Helper()
	apply(kube.MachineConfigPools, mctest.RolePool("infra"))
	apply(kube.MachineConfigs, infraMC("bogus"))
	waitFor(t, "pool infra's render failed", func() bool {
		c, body, _ := in.get("/config/infra")
		return c == 500 && strings.Contains(string(body), "no good render")
	})
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.5")}}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	resp, err := c.Post(in.base+"/v1/node-failure", "application/json",
		strings.NewReader(`{"pool":"infra","nodeID":"ip-10-0-2-7","stage":"firstboot-update","errorMessage":"pull failed"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a report for the failed pool infra: %d", resp.StatusCode)
	}
	waitFor(t, "a FirstbootFailed Event on pool infra", func() bool { return poolEventReasons(dyn, "infra", host)["FirstbootFailed"] })
	_, metrics, _ := in.get("/metrics")
	if !bytes.Contains(metrics, []byte(`mcs_node_failure_reports_total{pool="infra",stage="firstboot-update"} 1`)) || bytes.Contains(metrics, []byte(`pool="other"`)) {
		t.Errorf("the failed pool's report is not counted under its name:\n%s", metrics)
	}
}

// floodReports sends 1,000 copies of failedReport from one address, with
// nodes fetching their configs beside it: all fetches served, the reports
// past the address's limit only counted, still one Event.
func floodReports(t *testing.T, in *instance, dyn dynamic.Interface, host string, first time.Time) {
	t.Helper()
	stop := make(chan struct{})
	var fetches, failed int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			code, _, err := in.get("/config/worker", "User-Agent", "Ignition/v2.27.0", "Accept", "application/vnd.coreos.ignition+json;version=3.5.0")
			fetches++
			if err != nil || code != 200 {
				failed++
			}
		}
	}()
	began := time.Now()
	for i := range 1000 {
		if code, body := postReport(t, in.base, failedReport); code != http.StatusAccepted {
			t.Fatalf("report %d of the flood: %d %s", i, code, body)
		}
	}
	took := time.Since(began)
	close(stop)
	wg.Wait()
	// An address may report 5 at once (the first report before the flood
	// took one), then one a minute from that first report: a test slowed
	// by a loaded machine earns one more a minute since. How fast reports
	// are taken is for a benchmark, not for this test's wall clock.
	extra := int(time.Since(first) / time.Minute)
	if fetches == 0 || failed > 0 {
		t.Errorf("node fetches during the flood: %d of %d failed", failed, fetches)
	}
	var st status.Status
	_, raw, _ := in.get("/status")
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if r := st.NodeFailures.Reports; len(r) != 1 || r[0].Count > 5+extra || st.NodeFailures.Limited < uint64(995-extra) || strings.Contains(r[0].Message, pullSecretAuth) {
		t.Errorf("/status nodeFailures after the flood: %+v", st.NodeFailures)
	}
	_, metrics, _ := in.get("/metrics")
	if !bytes.Contains(metrics, []byte(`mcs_node_failure_reports_total{pool="worker",stage="firstboot-update"} `)) {
		t.Error("/metrics does not count the reports by pool and stage")
	}
	waitFor(t, "the Event counting the reports within the limit", func() bool {
		evs := firstbootEvents(t, dyn, host)
		count, _, _ := unstructured.NestedInt64(evs[0].Object, "count")
		return len(evs) == 1 && count == int64(st.NodeFailures.Reports[0].Count)
	})
	evs := firstbootEvents(t, dyn, host)
	if len(evs) != 1 {
		t.Fatalf("%d FirstbootFailed Events after the flood, want 1", len(evs))
	}
	count, _, _ := unstructured.NestedInt64(evs[0].Object, "count")
	t.Logf("1,000 reports in %v: one Event, count %d; %d limited; %d node fetches served meanwhile", took.Round(time.Millisecond), count, st.NodeFailures.Limited, fetches)

}

func postReport(t *testing.T, base, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(base+"/v1/node-failure", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// firstbootEvents are the FirstbootFailed Events this host wrote on pool
// worker.
func firstbootEvents(t *testing.T, dyn dynamic.Interface, host string) []*unstructured.Unstructured {
	t.Helper()
	l, err := dyn.Resource(kube.Events).Namespace(metav1.NamespaceDefault).List(context.Background(),
		metav1.ListOptions{FieldSelector: "involvedObject.kind=MachineConfigPool,involvedObject.name=worker,reason=FirstbootFailed"})
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for i := range l.Items {
		if h, _, _ := unstructured.NestedString(l.Items[i].Object, "source", "host"); h == host {
			out = append(out, &l.Items[i])
		}
	}
	return out
}

package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// Each notice becomes one Event of its kind's type and reason on its pool;
// an unreachable API server is not told it was unreachable.
func TestEventNotifierNotices(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	rec.IncludeObject = true
	e := &EventNotifier{src: &Source{caches: caches{synced: make(chan struct{})}}, recorder: rec}
	e.Notify(source.Notice{Kind: source.NoticeNodeRefused, Pool: "worker", Message: "node at 10.0.0.1 refused"})
	e.Notify(source.Notice{Kind: source.NoticeFirstFetch, Pool: "worker", Message: "rendered-worker-1 first fetched"})
	e.Notify(source.Notice{Kind: source.NoticeRenderFailed, Pool: "master", Err: errors.New("bad"), Message: strings.Repeat("é", 1000)})
	e.Notify(source.Notice{Kind: source.NoticeRenderFailed, Pool: "master", Err: fmt.Errorf("load: %w", &apiError{Host: "h", Err: errors.New("refused")}), Message: "api down"})
	e.Notify(source.Notice{Kind: source.NoticeRenderFailed, Pool: "master", Err: &notSyncedError{Host: "h"}, Message: "not synced"})
	close(rec.Events)
	var got []string
	for ev := range rec.Events {
		got = append(got, ev)
	}
	if len(got) != 3 {
		t.Fatalf("%d events: %q", len(got), got)
	}
	for i, want := range []string{
		"Warning NodeRefused node at 10.0.0.1 refused involvedObject{kind=MachineConfigPool,apiVersion=machineconfiguration.openshift.io/v1}",
		"Normal RenderedConfigFetched rendered-worker-1 first fetched involvedObject{kind=MachineConfigPool,apiVersion=machineconfiguration.openshift.io/v1}",
	} {
		if got[i] != want {
			t.Errorf("event %d:\n%s\nwant\n%s", i, got[i], want)
		}
	}
	msg := strings.TrimPrefix(got[2], "Warning RenderFailed ")
	msg = msg[:strings.LastIndex(msg, " involvedObject")]
	if len(msg) > eventMessageMax || !strings.HasSuffix(msg, "é…") {
		t.Errorf("long message cut to %d bytes, ending %q", len(msg), msg[len(msg)-8:])
	}
}

// The Events of one replica, as the deploy/ ServiceAccount: a refused node,
// the first fetch of a rendered config and a failing render, each on its
// MachineConfigPool, found by `oc describe` (its kind, name and uid).
func TestEventsOnPools(t *testing.T) {
	cp := needControlPlane(t)
	cp.ApplyDir(t, clusterDir(t, "aws"))
	st, _ := cp.eventStack(t, cp.serviceAccount(t), "minIgnitionVersion: {worker: 2.20.0}\n")
	st.waitServing(t, "master", "worker")

	old := st.get(t, "/config/worker", accept(convert.V3_4), "Ignition/v2.14.0")
	if !strings.Contains(old.body, skewgate.IssuePath("worker")) {
		t.Fatalf("Ignition v2.14.0 was not refused: %d %.200s", old.code, old.body)
	}
	if r := st.get(t, "/config/worker", accept(convert.V3_5), "Ignition/v2.27.0"); strings.Contains(r.body, skewgate.IssuePath("worker")) {
		t.Fatal("Ignition v2.27.0 was refused")
	}
	cp.apply(t, object(t, mctest.Config{Name: "60-master-turbo", Role: "master", Spec: map[string]any{"kernelType": "turbo"}}.YAML()))
	st.srv.CertificateReload(errors.New("certificate /etc/mcs/tls/tls.crt and key /etc/mcs/tls/tls.key: tls: private key does not match public key"))
	rendered := st.srv.Status().Pools
	for _, want := range []struct{ pool, typ, reason, msg string }{
		{"worker", corev1.EventTypeWarning, string(source.NoticeNodeRefused), "node at 192.0.2.1 (Ignition v2.14.0) refused (ignition-too-old, reference mcs-skew-"},
		{"worker", corev1.EventTypeNormal, string(source.NoticeFirstFetch), rendered[1].Rendered + " first fetched by the node at 192.0.2.1 (Ignition v2.27.0)"},
		{"master", corev1.EventTypeWarning, string(source.NoticeRenderFailed), "MachineConfig/60-master-turbo: $.spec.kernelType"},
		{"worker", corev1.EventTypeWarning, string(source.NoticeCertificateReloadFailed), "certificate was not reloaded; the previous one is served until it expires: certificate /etc/mcs/tls/tls.crt and key /etc/mcs/tls/tls.key"},
	} {
		eventually(t, renderWait, want.reason+" Event on "+want.pool, func() error {
			evs := cp.poolEvents(t, want.pool)
			for _, ev := range evs {
				if ev.Reason == want.reason && ev.Type == want.typ && strings.Contains(ev.Message, want.msg) {
					return checkEvent(cp, ev, want.pool)
				}
			}
			return fmt.Errorf("%d Events on the pool, none %s %s %q", len(evs), want.typ, want.reason, want.msg)
		})
	}
}

// checkEvent checks an Event names the pool as `oc describe` finds it, and
// this replica as its source.
func checkEvent(cp *controlPlane, ev corev1.Event, pool string) error {
	obj, err := cp.dyn.Resource(MachineConfigPools).Get(context.Background(), pool, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if ev.InvolvedObject.UID != obj.GetUID() || ev.Source.Component != eventComponent || ev.Source.Host != "replica-a" || ev.Namespace != metav1.NamespaceDefault {
		return fmt.Errorf("event %s: object %+v, source %+v, namespace %s", ev.Name, ev.InvolvedObject, ev.Source, ev.Namespace)
	}
	return nil
}

// A node in a boot loop: 1,000 refusals from one address in a row make one
// Event, whose count the recorder patches up to its burst, and a
// bounded number of writes to the API server; 1,000 more from 100 other
// addresses add none; and a failing render, another reason, is still told.
func TestEventsBoundedUnderBootLoop(t *testing.T) {
	cp := needControlPlane(t)
	cp.ApplyDir(t, clusterDir(t, "aws"))
	sa := cp.serviceAccount(t)
	var writes atomic.Int64
	sa.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if Events.Resource == resourceOfPath(r.URL.Path) && (r.Method == http.MethodPost || r.Method == http.MethodPatch) {
				writes.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	st, _ := cp.eventStack(t, sa, "mode: Manual\nmanual: {mode: OCPVersion, ocpVersion: 4.12.0}\n")
	st.waitServing(t, "worker")

	const refusals = 1000
	start := time.Now()
	refuse(t, st, refusals, func(i int) string { return fmt.Sprintf("10.0.32.17:%d", 30000+i) })
	sent := time.Since(start)
	oneAddress := settle(&writes)
	objects, count := refusedEvents(t, cp, "node at 10.0.32.17 ")
	t.Logf("%d refusals from one address in %s: %d Event object(s), count %d; %d Event writes to the API server in all",
		refusals, sent.Round(time.Millisecond), objects, count, oneAddress)
	refuse(t, st, refusals, func(i int) string { return fmt.Sprintf("10.0.33.%d:%d", i%100, 30000+i) })
	total := settle(&writes)
	all, _ := refusedEvents(t, cp, "node at ")
	elapsed := time.Since(start)
	t.Logf("then %d from 100 addresses: %d Event objects on the pool, %d writes in all, %s after the first refusal", refusals, all, total, elapsed.Round(time.Millisecond))
	// client-go's correlator combines similar Events within 10 minutes,
	// which the one object below relies on.
	if elapsed > 10*time.Minute {
		t.Fatalf("the refusals took %s, past the correlator's 10 min window", elapsed)
	}
	// client-go's spam filter: a burst of 25 writes per pool and reason,
	// refilled one per 5 minutes, so a slow run (-race at load 20–30 took
	// over a minute) may have earned one more. waitServing's own request
	// was refused too (from httptest's address) and shares the budget.
	const burst, refill = 25, 5 * time.Minute
	budget := burst + int64(elapsed/refill)
	if objects != 1 || oneAddress > budget || int64(count) > oneAddress || total > budget {
		t.Errorf("one address: %d Event objects, count %d, %d writes; in all %d writes: want 1 object and at most %d writes", objects, count, oneAddress, total, budget)
	}

	cp.apply(t, object(t, mctest.Config{Name: "60-worker-turbo", Role: "worker", Spec: map[string]any{"kernelType": "turbo"}}.YAML()))
	eventually(t, renderWait, "a RenderFailed Event past the refusals' budget", func() error {
		for _, ev := range cp.poolEvents(t, "worker") {
			if ev.Reason == string(source.NoticeRenderFailed) {
				return nil
			}
		}
		return errors.New("none")
	})
}

// refuse sends n requests the gate refuses, from addr(i).
func refuse(t *testing.T, st *stack, n int, addr func(i int) string) {
	t.Helper()
	for i := range n {
		req := httptest.NewRequest(http.MethodGet, "/config/worker", nil)
		req.Header.Set("Accept", accept(convert.V3_4))
		req.Header.Set("User-Agent", "Ignition/v2.20.0")
		req.RemoteAddr = addr(i)
		w := httptest.NewRecorder()
		st.srv.ServeHTTP(w, req)
		if !strings.Contains(w.Body.String(), skewgate.IssuePath("worker")) {
			t.Fatalf("request %d not refused: %d", i, w.Code)
		}
	}
}

// settle waits until the recorder, which writes in the background, has
// been quiet for 3 s, and returns the writes counted. client-go's event
// broadcaster writes to a real API server with no flush to wait on: only
// quiet on the wall clock says it is done.
func settle(writes *atomic.Int64) int64 {
	n := writes.Load()
	for quiet := time.Now(); time.Since(quiet) < 3*time.Second; time.Sleep(100 * time.Millisecond) {
		if m := writes.Load(); m != n {
			n, quiet = m, time.Now()
		}
	}
	return n
}

// refusedEvents counts the worker pool's NodeRefused Events whose message
// holds msg, and sums their counts.
func refusedEvents(t *testing.T, cp *controlPlane, msg string) (objects, count int64) {
	t.Helper()
	for _, ev := range cp.poolEvents(t, "worker") {
		if ev.Reason == string(source.NoticeNodeRefused) && strings.Contains(ev.Message, msg) {
			objects++
			count += int64(ev.Count)
		}
	}
	return objects, count
}

// resourceOfPath is the resource of an API request path
// (/api/v1/namespaces/default/events/name → events).
func resourceOfPath(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "namespaces" && i+2 < len(parts) {
			return parts[i+2]
		}
	}
	return ""
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// eventStack is a replica of the given identity whose skew gate applies
// policy and whose notices become Events from host "replica-a".
func (cp *controlPlane) eventStack(t *testing.T, identity *rest.Config, policy string) (*stack, *EventNotifier) {
	t.Helper()
	p, err := skewgate.ParsePolicy([]byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	// Events outlive the pools resetObjects deletes.
	if err := cp.kube.CoreV1().Events(metav1.NamespaceDefault).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	src := cp.newSource(t, Config{REST: identity})
	ev, err := src.Events(EventsConfig{Host: "replica-a"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ev.Shutdown)
	return serveSourceWith(t, src, serve.Config{Gate: skewgate.New(p, testLogger(t)), Notify: ev.Notify}), ev
}

// poolEvents lists the Events on a MachineConfigPool, as `oc describe` does.
func (cp *controlPlane) poolEvents(t *testing.T, pool string) []corev1.Event {
	t.Helper()
	l, err := cp.kube.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=MachineConfigPool,involvedObject.name=" + pool,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

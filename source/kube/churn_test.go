package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/serve/status"
)

// churnFor is how long TestChurnBacklog changes MachineConfigs:
// MCS_CHURN_SECONDS, else 12 s (the 30 s prove no more: the
// backlog is read in bulk every few tenths of a second either way).
func churnFor(t *testing.T) time.Duration {
	if s := os.Getenv("MCS_CHURN_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("MCS_CHURN_SECONDS=%q: %v", s, err)
		}
		return time.Duration(n) * time.Second
	}
	return 12 * time.Second
}

// A MachineConfig created and one deleted twenty times a second, the
// source's client held to client-go's default rate (5 requests a second:
// a GET per changed object falls behind without bound, 73 s behind after
// 30 s): the backlog shows in Source.Backlog, mcs_kube_backlog_objects and
// /status (backlog, SourceBehind) while it lasts; it is read in bulk, so
// a MachineConfig created after the churn is served within 15 s (0.3 s on
// an idle machine; read a GET at a time, it would wait out a backlog of
// about 30 s), and the backlog then clears.
func TestChurnBacklog(t *testing.T) {
	cp := needControlPlane(t)
	cp.apply(t, poolObj(t, "worker"), mcObject(t, "50-worker", "worker", "one"))
	reg := prometheus.NewRegistry()
	src := cp.newSource(t, Config{QPS: 5, Burst: 5, BacklogList: 5, Registerer: reg})
	st := serveSourceWith(t, src, serve.Config{Registry: reg, Backlog: src.Backlog})
	st.waitServing(t, "worker")

	writer := rest.CopyConfig(cp.admin)
	writer.QPS, writer.Burst = 1000, 1000
	mcs := dynamic.NewForConfigOrDie(writer).Resource(MachineConfigs)
	ctx, cancel := context.WithTimeout(context.Background(), churnFor(t))
	defer cancel()
	churned := make(chan churnResult, 1)
	go func() { churned <- churn(ctx, t, mcs, 20) }()

	var seen int
	eventually(t, churnFor(t), "the backlog shown while the churn lasts", func() error {
		b, s := src.Backlog(), st.srv.Status()
		metric := gaugeValue(t, reg, "mcs_kube_backlog_objects")
		if b.Objects == 0 || s.Backlog == nil || s.Backlog.Objects == 0 || metric == 0 {
			return fmt.Errorf("backlog %d, /status %+v, metric %v", b.Objects, s.Backlog, metric)
		}
		if c := condition(s, "SourceBehind"); c.Status != "True" || !strings.Contains(c.Message, "changed objects seen and not read yet") {
			return fmt.Errorf("condition %+v", c)
		}
		seen = b.Objects
		return nil
	})
	res := <-churned
	if res.err != nil {
		t.Fatal(res.err)
	}
	t.Logf("churn: %d MachineConfigs created and %d deleted in %s; a backlog of %d seen", res.created, res.deleted, churnFor(t), seen)

	start := time.Now()
	cp.apply(t, mcObject(t, "60-worker", "worker", "after"))
	eventually(t, 15*time.Second, "a MachineConfig created after the churn served", func() error {
		if r := st.get(t, "/config/worker", ""); !strings.Contains(r.body, "/etc/60-worker") {
			return fmt.Errorf("%d, without /etc/60-worker", r.code)
		}
		return nil
	})
	t.Logf("the MachineConfig created after the churn served in %s", time.Since(start).Round(time.Millisecond))
	eventually(t, renderWait, "the backlog cleared", func() error {
		s := st.srv.Status()
		if c := condition(s, "SourceBehind"); src.Backlog().Objects != 0 || c.Status != "False" || gaugeValue(t, reg, "mcs_kube_backlog_objects") != 0 {
			return fmt.Errorf("backlog %d, condition %+v", src.Backlog().Objects, c)
		}
		return nil
	})
}

type churnResult struct {
	created, deleted int
	err              error
}

// churn creates a MachineConfig and deletes the one created a second
// before, perSecond times a second, until ctx ends.
func churn(ctx context.Context, t *testing.T, mcs dynamic.NamespaceableResourceInterface, perSecond int) churnResult {
	var res churnResult
	tick := time.NewTicker(time.Second / time.Duration(perSecond))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return res
		case <-tick.C:
		}
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := mcs.Create(wctx, mcObject(t, fmt.Sprintf("churn-%05d", i), "churn", strconv.Itoa(i)), metav1.CreateOptions{})
		if err == nil && i >= perSecond {
			err = mcs.Delete(wctx, fmt.Sprintf("churn-%05d", i-perSecond), metav1.DeleteOptions{})
			res.deleted++
		}
		cancel()
		if err != nil {
			res.err = errors.Join(res.err, err)
			return res
		}
		res.created++
	}
}

// condition is the status's condition of type typ, or a zero one.
func condition(s status.Status, typ string) status.Condition {
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return status.Condition{}
}

// gaugeValue is the value of the gauge name in reg, or -1 when absent.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	if v, ok := testkit.Metric(t, reg, name); ok {
		return v
	}
	return -1
}

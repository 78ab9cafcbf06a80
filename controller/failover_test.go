package controller

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// write is one request that changes a MachineConfig or a pool.
type write struct {
	who        string
	start, end time.Time
	what       string
}

// writeLog records the writes of every controller of a test.
type writeLog struct {
	mu     sync.Mutex
	writes []write
}

func (l *writeLog) wrap(who string, rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet || !strings.Contains(req.URL.Path, "/"+kube.Group+"/") {
				return rt.RoundTrip(req)
			}
			start := time.Now()
			resp, err := rt.RoundTrip(req)
			l.mu.Lock()
			l.writes = append(l.writes, write{who, start, time.Now(), req.Method + " " + req.URL.Path})
			l.mu.Unlock()
			return resp, err
		})
	})
	return rc
}

func (l *writeLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.writes)
}

// changeWhileKilled adds n MachineConfigs, a writing each of the first
// half before the next comes, and kills a after the half: it returns their
// names and when a was killed.
func changeWhileKilled(t *testing.T, cp *kubetest.ControlPlane, log *writeLog, a *running, n int) ([]string, time.Time) {
	var killed time.Time
	var names []string
	for i := range n {
		name := fmt.Sprintf("60-worker-%02d", i)
		names = append(names, name)
		writes := log.count()
		cp.Apply(t, mcObject(t, name, "worker", name))
		if i < n/2 {
			kubetest.Eventually(t, 30*time.Second, "a writes "+name, func() error {
				if log.count() == writes {
					return fmt.Errorf("no write")
				}
				return nil
			})
		}
		if i == n/2 {
			a.stop()
			killed = time.Now()
		}
	}
	return names, killed
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Two controllers; the leader killed mid-run (its Lease not released, as
// in a crash). At any time one of them writes; the standby takes over
// within the lease duration and finishes the work: every MachineConfig
// added is in the final render, and no content is stored twice.
func TestLeaderKilledMidRun(t *testing.T) {
	cp := needControlPlane(t)
	cp.Apply(t, poolObject(t, "worker"), poolObject(t, "infra"), mcObject(t, "50-worker", "worker", "base"))
	var log writeLog
	cfg := Config{Identity: "a", REST: log.wrap("a", cp.Admin)}
	fastLease(&cfg)
	a := startController(t, cp, cfg)
	kubetest.Eventually(t, 20*time.Second, "a leads", func() error {
		if !a.book.copy().Leading {
			return fmt.Errorf("leader %q", a.book.copy().Leader)
		}
		return nil
	})
	cfg.Identity, cfg.REST = "b", log.wrap("b", cp.Admin)
	b := startController(t, cp, cfg)

	want, killed := changeWhileKilled(t, cp, &log, a, 12)
	server := newServerSource(t, cp, kube.ModeSelf, render.Options{})
	for _, p := range []string{"worker", "infra"} {
		srcs := append([]string{"50-worker"}, want...)
		kubetest.Eventually(t, 30*time.Second, "the standby finishes "+p, func() error {
			_, err := pointedAt(t, cp, server, p, srcs, "data:,60-worker-11")
			return err
		})
	}
	if !b.book.copy().Leading {
		t.Error("b does not lead")
	}

	log.mu.Lock()
	writes := slices.Clone(log.writes)
	log.mu.Unlock()
	var lastA, firstB time.Time
	for _, w := range writes {
		switch {
		case w.who == "a" && w.end.After(lastA):
			lastA = w.end
		case w.who == "b" && (firstB.IsZero() || w.start.Before(firstB)):
			firstB = w.start
		}
	}
	if lastA.IsZero() || firstB.IsZero() {
		t.Fatalf("writes by a until %v, by b from %v: want both", lastA, firstB)
	}
	if !firstB.After(lastA) {
		t.Errorf("two writers: b wrote at %v, before a's last write ended at %v", firstB, lastA)
	}
	// The lease runs out, then b renders and writes: 5 s for that under
	// -race on a loaded machine, well short of a second lease.
	if took := firstB.Sub(killed); took > cfg.LeaseDuration+5*time.Second {
		t.Errorf("b took over %s after the kill, above the lease duration", took)
	}
	t.Logf("%d writes; a's last %s after the kill, b's first %s after it", len(writes), lastA.Sub(killed).Round(time.Millisecond), firstB.Sub(killed).Round(time.Millisecond))

	// No content stored twice: names are content-addressed, and each
	// stored config's name is the hash of what it holds.
	for _, p := range []string{"worker", "infra"} {
		seen := map[string]string{}
		for name, u := range renderedConfigs(t, cp, p) {
			spec := fmt.Sprint(u.Object["spec"])
			if other, dup := seen[spec]; dup {
				t.Errorf("%s and %s hold the same content", name, other)
			}
			seen[spec] = name
		}
	}
}

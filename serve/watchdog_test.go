package serve

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ignition-mcs/mcs/internal/syncbuf"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/source"
)

// hanging is a Source whose second load hangs, reading a file, until
// released; it counts the loads running at once.
type hanging struct {
	result  *render.Result
	release chan struct{}

	mu                      sync.Mutex
	loads, running, maxOnce int
}

func (s *hanging) Load(ctx context.Context) (*source.Input, error) {
	s.mu.Lock()
	s.loads++
	n := s.loads
	s.running++
	s.maxOnce = max(s.maxOnce, s.running)
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.running--; s.mu.Unlock() }()
	if n == 2 {
		source.Reading(ctx, "/src/97-slow.yaml")
		<-s.release
	}
	return &source.Input{Results: []*render.Result{s.result}}, nil
}

func (s *hanging) Watch(ctx context.Context, _ chan<- struct{}) { <-ctx.Done() }
func (s *hanging) String() string                               { return "hanging" }

func (s *hanging) count() (loads, maxOnce int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loads, s.maxOnce
}

// A load that hangs is reported stuck (in /status, the metrics and a WARN
// log naming the file) while the last good render serves; changes meanwhile
// start no second load; once it ends, the one change pending is loaded and
// the report clears. It runs on a synctest bubble's clock: the other loads
// take no time on it, so only the hung one is reported.
func TestReloadWatchdog(t *testing.T) {
	synctest.Test(t, reloadWatchdog)
}

func reloadWatchdog(t *testing.T) {
	logs := &syncbuf.Buffer{}
	srv := mustNew(t, Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	src := &hanging{result: result(t, "worker", plainIgn), release: make(chan struct{})}
	rl := &pipeline.Reloader{Source: src, Server: srv, Timeout: time.Second, Debounce: time.Millisecond, Logger: srv.cfg.Logger}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	trigger := make(chan struct{}, 1)
	go rl.Run(ctx, trigger)
	// Logged once the first load's watch has ended.
	synctest.Wait()
	if !strings.Contains(logs.String(), `msg="render served" generation=1 `) {
		t.Fatalf("no first render:\n%s", logs)
	}
	mark, stuck0 := len(logs.String()), metric(t, srv, "mcs_reload_stuck_total")

	trigger <- struct{}{}
	testkit.Advance(rl.Timeout + time.Millisecond)
	if !strings.Contains(srv.Status().ReloadStuck, "/src/97-slow.yaml") {
		t.Fatalf("not reported stuck: %q", srv.Status().ReloadStuck)
	}
	st := srv.Status()
	if !strings.HasPrefix(st.ReloadStuck, "reload stuck since ") || !strings.Contains(st.ReloadStuck, ", reading /src/97-slow.yaml; serving the last good render") {
		t.Errorf("reloadStuck %q", st.ReloadStuck)
	}
	if c := st.Conditions[1]; c.Type != "ReloadStuck" || c.Status != "True" || c.Message != st.ReloadStuck {
		t.Errorf("condition %+v", c)
	}
	if g, n := metric(t, srv, "mcs_reload_stuck"), metric(t, srv, "mcs_reload_stuck_total"); g != 1 || n != stuck0+1 {
		t.Errorf("mcs_reload_stuck %v, mcs_reload_stuck_total %v, want 1, %v", g, n, stuck0+1)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN msg=\"reload stuck; serving the last good render\"") || !strings.Contains(l, "reading=/src/97-slow.yaml") {
		t.Errorf("no WARN naming the file in:\n%s", l)
	}
	if w := get(t, srv, "GET", "/config/worker"); w.Code != 200 {
		t.Errorf("/config/worker answered %d while a load hangs", w.Code)
	}

	goroutines := runtime.NumGoroutine()
	for range 50 {
		trigger <- struct{}{}
		testkit.Advance(3 * time.Millisecond) // past the debounce: each would be a load
	}
	if loads, once := src.count(); loads != 2 || once != 1 {
		t.Errorf("%d loads, %d at once, while one hangs; want 2, 1", loads, once)
	}
	// A goroutine a trigger would be 50 more; the slack is for the rest of
	// the process (NumGoroutine is not the bubble's count).
	if now := runtime.NumGoroutine(); now > goroutines+10 {
		t.Errorf("goroutines grew from %d to %d while a load hangs", goroutines, now)
	}

	close(src.release)
	testkit.Advance(time.Second)
	if st := srv.Status(); st.ReloadStuck != "" || st.Generation != 3 {
		t.Fatalf("after release: stuck %q, generation %d, want none, 3", st.ReloadStuck, st.Generation)
	}
	if loads, once := src.count(); loads != 3 || once != 1 {
		t.Errorf("%d loads, %d at once; want the hung one and one more for the changes meanwhile", loads, once)
	}
	l := logs.String()[mark:]
	reports := strings.Count(l, `level=WARN msg="reload stuck;`)
	if reports != 1 {
		t.Errorf("%d stuck reports, want the hung load's only:\n%s", reports, l)
	}
	if hung := strings.Count(l, "reading=/src/97-slow.yaml"); hung != 1 {
		t.Errorf("the hung load reported %d times, want once:\n%s", hung, l)
	}
	if g, n := metric(t, srv, "mcs_reload_stuck"), metric(t, srv, "mcs_reload_stuck_total"); g != 0 || n != stuck0+float64(reports) {
		t.Errorf("after recovery: mcs_reload_stuck %v, mcs_reload_stuck_total %v, want 0, %v (%d reports logged)", g, n, stuck0+float64(reports), reports)
	}
	if c := srv.Status().Conditions[1]; c.Status != "False" {
		t.Errorf("condition %+v after recovery", c)
	}
	if !strings.Contains(logs.String(), "stuck reload ended") {
		t.Error("the end of the stuck load was not logged")
	}
}

// What a load skipped is shown in /status and logged once, not on every
// reload that skips it again.
func TestReloadWarnings(t *testing.T) {
	logs := &syncbuf.Buffer{}
	srv := mustNew(t, Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	w := result(t, "worker", plainIgn)
	fifo := "/src/97-x.yaml: warning: not a regular file: a named pipe (FIFO), so never opened; skipped"
	src := &inputs{Loads: []load{
		{In: &source.Input{Results: []*render.Result{w}, Warnings: []string{fifo}}},
		{In: &source.Input{Warnings: []string{fifo}}, Err: context.DeadlineExceeded},
		{In: &source.Input{Results: []*render.Result{w}}},
	}}
	rl := &pipeline.Reloader{Source: src, Server: srv}
	for i, want := range [][]string{{fifo}, {fifo}, nil} {
		rl.Reload(context.Background())
		if got := srv.Status().Warnings; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("load %d: warnings %q, want %q", i, got, want)
		}
	}
	if n := strings.Count(logs.String(), "named pipe"); n != 1 {
		t.Errorf("the warning was logged %d times:\n%s", n, logs.String())
	}
}

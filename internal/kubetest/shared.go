package kubetest

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ignition-mcs/mcs/internal/mctest"
)

// Shared is the one control plane a test package's tests share.
type Shared struct {
	// Benchmarks says the package's benchmarks need it too.
	Benchmarks bool

	CP      *ControlPlane
	Missing string // why there is none: binaries missing (skip, or fail under CI)
	Err     error  // the binaries are there but would not start (always a failure)
}

// Main is a package's TestMain: it starts the shared control plane (see
// setup), calls ready with it if it started, runs the tests, stops it and
// exits.
func (s *Shared) Main(m *testing.M, label string, all bool, ready func(*ControlPlane)) {
	flag.Parse()
	os.Exit(s.run(m, label, all, ready))
}

func (s *Shared) run(m *testing.M, label string, all bool, ready func(*ControlPlane)) int {
	stop := s.setup(label, all)
	defer stop()
	if s.CP != nil && ready != nil {
		ready(s.CP)
	}
	return m.Run()
}

// setup starts the shared control plane, with every CRD when all, unless the
// run needs none, and returns what stops it. label prefixes the start-up
// line on stderr.
func (s *Shared) setup(label string, all bool) (stop func()) {
	// envtest's logger and client-go's klog would print every retry.
	ctrllog.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	stop = func() {}
	if why := notWanted(s.Benchmarks); why != "" {
		s.Missing = why
		return stop
	}
	assets, err := Assets()
	if err != nil {
		s.Missing = err.Error()
		return stop
	}
	crds, err := CRDFiles(all)
	if err != nil {
		s.Err = err
		return stop
	}
	start := time.Now()
	if s.CP, s.Err = Start(assets, crds); s.Err != nil {
		return stop
	}
	fmt.Fprintf(os.Stderr, "%s: control plane (kube-apiserver %s, etcd) up in %s\n", label, s.CP.Version, time.Since(start).Round(time.Millisecond))
	return func() {
		start := time.Now()
		s.CP.Stop()
		fmt.Fprintf(os.Stderr, "%s: control plane stopped in %s\n", label, time.Since(start).Round(time.Millisecond))
	}
}

// Need returns the shared control plane, or ends the test: a skip that
// says how to get the binaries, or under CI (CI=true) a failure.
func (s *Shared) Need(t testing.TB) *ControlPlane {
	t.Helper()
	if s.Err != nil {
		t.Fatal(s.Err)
	}
	if s.CP == nil {
		Missing(t, s.Missing)
	}
	return s.CP
}

// notWanted says why this run needs no control plane: -short, fuzzing
// (every fuzz worker runs TestMain too), listing, or benchmarks alone.
func notWanted(benchmarks bool) string {
	val := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	switch {
	case testing.Short():
		return "-short given"
	case val("test.fuzz") != "" || val("test.fuzzworker") == "true":
		return "fuzzing"
	case val("test.list") != "":
		return "listing"
	case val("test.run") == "^$" && (!benchmarks || val("test.bench") == ""):
		return "no tests selected"
	}
	return ""
}

// Object is the one object of tmpl with each old string of kv replaced by
// the new one after it.
func Object(t testing.TB, tmpl string, kv ...string) *unstructured.Unstructured {
	t.Helper()
	objs := DecodeObjects(t, []byte(strings.NewReplacer(kv...).Replace(tmpl)))
	if len(objs) != 1 {
		t.Fatalf("%d objects", len(objs))
	}
	return objs[0]
}

// MachineConfig is mctest's MachineConfig as an object.
func MachineConfig(t testing.TB, name, role, content string) *unstructured.Unstructured {
	return Object(t, mctest.MachineConfig(name, role, content))
}

// Pool is mctest's custom pool as an object.
func Pool(t testing.TB, name string) *unstructured.Unstructured {
	return Object(t, mctest.Pool(name))
}

// Logger writes to the test's log, so a failure shows what the code under
// test saw; lines from goroutines still winding down after the test are
// dropped (t.Log would panic).
func Logger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// Run starts s (a source or controller) with a context the test's end
// cancels.
func Run(t testing.TB, s interface{ Start(context.Context) }) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.Start(ctx)
}

// Get is the object named, read through from (a typed client's resource,
// such as Secrets(ns)), or the end of the test where it cannot be read.
func Get[T any](t testing.TB, from interface {
	Get(context.Context, string, metav1.GetOptions) (T, error)
}, name string) T {
	t.Helper()
	v, err := from.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

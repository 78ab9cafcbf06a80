package kubetest

import (
	"context"
	"encoding/json"
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

// Shared is the one control plane a test package's tests share. The first
// test or benchmark that needs it starts it, so a run that selects none of
// them (-run, -list, -short, a fuzz worker) starts nothing.
type Shared struct {
	label string
	all   bool
	ready func(*ControlPlane)

	once sync.Once
	cp   *ControlPlane
	why  string // why there is none: binaries missing (skip, or fail under CI)
	err  error  // the binaries are there but would not start (always a failure)
}

// Main is a package's TestMain: it runs the tests, stops the shared control
// plane if one of them started it, and exits. label prefixes the start-up
// line on stderr; all asks for every CRD; ready, if not nil, is called with
// the control plane once it is up.
func (s *Shared) Main(m *testing.M, label string, all bool, ready func(*ControlPlane)) {
	s.label, s.all, s.ready = label, all, ready
	code := m.Run()
	if s.cp != nil {
		start := time.Now()
		s.cp.Stop()
		fmt.Fprintf(os.Stderr, "%s: control plane stopped in %s\n", label, time.Since(start).Round(time.Millisecond))
	}
	os.Exit(code)
}

// start starts the shared control plane, or records why there is none.
func (s *Shared) start() {
	// envtest's logger and client-go's klog would print every retry.
	ctrllog.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	if testing.Short() {
		s.why = "-short given"
		return
	}
	assets, err := findAssets()
	if err != nil {
		s.why = err.Error()
		return
	}
	crds, err := CRDFiles(s.all)
	if err != nil {
		s.err = err
		return
	}
	start := time.Now()
	if s.cp, s.err = Start(assets, crds); s.err != nil {
		return
	}
	fmt.Fprintf(os.Stderr, "%s: control plane (kube-apiserver %s, etcd) up in %s\n", s.label, s.cp.Version, time.Since(start).Round(time.Millisecond))
	if s.ready != nil {
		s.ready(s.cp)
	}
}

// Need returns the shared control plane, starting it on first use, or ends
// the test: a skip that says how to get the binaries, or under CI (CI=true)
// a failure.
func (s *Shared) Need(t testing.TB) *ControlPlane {
	t.Helper()
	s.once.Do(s.start)
	if s.err != nil {
		t.Fatal(s.err)
	}
	if s.cp == nil {
		missing(t, s.why)
	}
	return s.cp
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

// ToObject is v (a map or a typed object) as the API server's JSON reads it.
func ToObject(t testing.TB, v any) *unstructured.Unstructured {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u
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

// Package stored finds the MachineConfigs stored before the admission webhook that the release a rollback returns to cannot parse, and stores them again at the lowest spec.
package stored

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/ignition-mcs/mcs/convert"
)

// Config is what a Watch reads and where it reports.
type Config struct {
	Client dynamic.Interface
	// Ceiling is the newest spec the release a rollback returns to parses,
	// read at every pass (it follows the cluster's history); zero when
	// there is none, and then a config counts when it is stored above the
	// lowest spec that holds it. Until known is true nothing is reported:
	// no number rather than one against the wrong ceiling.
	Ceiling func() (spec convert.Version, known bool)
	// Resync re-reads every object this often, so a changed Ceiling is
	// seen without an event (0: never; refresh does it at once).
	Resync   time.Duration
	Registry prometheus.Registerer
	Log      *slog.Logger
	// Recorder gets an Event for each MachineConfig OpenShift's own
	// controllers store above the ceiling (see stored); nil: none.
	Recorder Recorder
}

// Watch keeps a Report of the stored MachineConfigs, per pool, from
// informers on MachineConfigs and MachineConfigPools.
type Watch struct {
	cfg    Config
	mcs    cache.SharedIndexInformer
	pools  cache.SharedIndexInformer
	kick   chan struct{}
	report atomic.Pointer[Report]
	memo   memo
	above  *prometheus.CounterVec
}

// New makes a Watch and registers its gauge; Start runs it.
func New(cfg Config) (*Watch, error) {
	w := &Watch{cfg: cfg, kick: make(chan struct{}, 1)}
	if w.cfg.Ceiling == nil {
		w.cfg.Ceiling = func() (convert.Version, bool) { return convert.Version{}, true }
	}
	w.memo.m = map[string]*summary{}
	w.mcs = newInformer(cfg.Client.Resource(machineConfigs), machineConfigs, cfg.Resync)
	w.pools = newInformer(cfg.Client.Resource(machineConfigPools), machineConfigPools, cfg.Resync)
	_ = w.mcs.SetTransform(w.summarize)
	_ = w.pools.SetTransform(stripManagedFields)
	for _, inf := range []cache.SharedIndexInformer{w.mcs, w.pools} {
		if _, err := inf.AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { w.refresh() },
			UpdateFunc: func(any, any) { w.refresh() },
			DeleteFunc: func(any) { w.refresh() },
		}, cfg.Resync); err != nil {
			return nil, err
		}
	}
	if _, err := w.mcs.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if u, ok := obj.(*unstructured.Unstructured); ok && !initial {
				w.stored(u)
			}
		},
		UpdateFunc: func(old, cur any) {
			if u, ok := cur.(*unstructured.Unstructured); ok && written(old, cur) {
				w.stored(u)
			}
		},
	}); err != nil {
		return nil, err
	}
	if err := cfg.Registry.Register(gauge{w}); err != nil {
		return nil, err
	}
	var err error
	if w.above, err = aboveMetric(cfg.Registry); err != nil {
		return nil, err
	}
	return w, nil
}

// Start runs the informers and the passes until ctx ends, in the
// background.
func (w *Watch) Start(ctx context.Context) {
	go w.mcs.RunWithContext(ctx)
	go w.pools.RunWithContext(ctx)
	go w.loop(ctx)
}

// refresh asks for a pass now (a changed ceiling, say); passes asked for
// while one runs are one more pass.
func (w *Watch) refresh() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// latest is the last pass's report, nil before the first pass (both
// resources listed, the ceiling known).
func (w *Watch) latest() *Report { return w.report.Load() }

// Status is the last report for /status, nil before the first.
func (w *Watch) Status() any {
	if r := w.latest(); r != nil {
		return r
	}
	return nil
}

func (w *Watch) loop(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), w.mcs.HasSynced, w.pools.HasSynced) {
		return
	}
	w.cfg.Log.Info("stored MachineConfigs listed", "machineConfigs", len(w.mcs.GetStore().ListKeys()), "pools", len(w.pools.GetStore().ListKeys()))
	for {
		w.pass()
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		}
	}
}

// pass builds the report from the informers' stores and publishes it.
func (w *Watch) pass() {
	ceiling, known := w.cfg.Ceiling()
	if !known {
		return // refresh is called once it is
	}
	pools := poolsFrom(objects(w.pools.GetStore()))
	mcs := objects(w.mcs.GetStore())
	r := &Report{Ceiling: ceiling, Pools: map[string]int{}, Checked: len(mcs)}
	for _, p := range pools {
		r.Pools[p.name] = 0
	}
	keep := map[string]bool{}
	for _, mc := range mcs {
		s, key := summaryOf(mc)
		keep[key] = true
		if s == nil {
			continue // not transformed: cannot happen
		}
		f, bad := s.verdict(ceiling)
		if !bad {
			continue
		}
		f.Name, f.Pools = mc.GetName(), poolsOf(mc, pools)
		for _, p := range f.Pools {
			r.Pools[p]++
		}
		r.Unreadable = append(r.Unreadable, f)
	}
	w.memo.sweep(keep)
	sortFindings(r.Unreadable)
	prev := w.report.Swap(r)
	if prev == nil || prev.total() != r.total() || prev.Ceiling != r.Ceiling {
		w.cfg.Log.Info("stored MachineConfigs checked", "ceiling", ceilingText(ceiling), "checked", r.Checked, "unreadable", r.total())
	}
}

// summaryField replaces spec in the cached MachineConfigs: the summary
// of their spec.config, so that a cluster's hundreds of rendered configs,
// each the size of a pool, are not held.
const summaryField = "summary"

// summarize is the MachineConfig informer's transform: it summarizes
// spec.config (once per content: memo) and keeps only the summary.
func (w *Watch) summarize(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	writer := configWriter(u.GetManagedFields())
	u.SetManagedFields(nil)
	if _, done, _ := unstructured.NestedMap(u.Object, "spec", summaryField); done {
		return u, nil
	}
	raw, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "config")
	var b []byte
	if raw != nil {
		b, _ = json.Marshal(raw)
	}
	sum := sha256.Sum256(b)
	key := hex.EncodeToString(sum[:])
	s := w.memo.get(key)
	if s == nil {
		s = summarize(b)
		w.memo.put(key, s)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return nil, err
	}
	m["key"] = key
	m[writerField] = writer
	u.Object["spec"] = map[string]any{summaryField: m}
	return u, nil
}

// summaryOf reads back what summarize kept, and the content key.
func summaryOf(u *unstructured.Unstructured) (*summary, string) {
	m, ok, _ := unstructured.NestedMap(u.Object, "spec", summaryField)
	if !ok {
		return nil, ""
	}
	key, _ := m["key"].(string)
	var s summary
	if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &s) != nil {
		return nil, key
	}
	return &s, key
}

// The resources read. Admission sees each write as the API server sends
// it, apart from the sources (internal/codecheck): these are theirs too.
var (
	machineConfigs     = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"}
	machineConfigPools = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigpools"}
)

// newInformer lists and watches one resource as unstructured objects:
// dynamicinformer's informer without its factory.
func newInformer(res dynamic.ResourceInterface, gvr schema.GroupVersionResource, resync time.Duration) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, o)
		},
	}, &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{ObjectDescription: gvr.String(), ResyncPeriod: resync})
}

// objects are a store's objects, sorted by name.
func objects(st cache.Store) []*unstructured.Unstructured {
	list := st.List()
	out := make([]*unstructured.Unstructured, 0, len(list))
	for _, o := range list {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

func stripManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetManagedFields(nil)
	}
	return obj, nil
}

// memo holds the summary of each content the cache holds, so a relist or
// a second MachineConfig with the same config is not converted again; a
// miss only costs the conversion.
type memo struct {
	mu sync.Mutex
	m  map[string]*summary
}

func (s *memo) put(key string, sum *summary) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = sum
}

func (s *memo) get(key string) *summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

// sweep drops the summaries of content no MachineConfig listed holds.
func (s *memo) sweep(keep map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if !keep[k] {
			delete(s.m, k)
		}
	}
}

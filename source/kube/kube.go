// Package kube supplies MachineConfig sets from a Kubernetes API server, through informers, rendered here or as the cluster rendered them.
package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source"
)

// Group is the API group of every object the source reads.
const Group = "machineconfiguration.openshift.io"

// The resources the source lists and watches; the ClusterRole in deploy/
// grants get, list and watch on exactly these.
var (
	MachineConfigs     = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "machineconfigs"}
	MachineConfigPools = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "machineconfigpools"}
	ControllerConfigs  = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "controllerconfigs"}
	// OSImageStreams list the OS image streams pools run, in the one
	// named "cluster" (osImageStreamName).
	OSImageStreams = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "osimagestreams"}
	// MachineConfigurations hold the cluster's boot-image skew policy, in
	// the one named "cluster" (clusterMachineConfiguration).
	MachineConfigurations = schema.GroupVersionResource{Group: "operator.openshift.io", Version: "v1", Resource: "machineconfigurations"}
)

// clusterMachineConfiguration is the MachineConfiguration the MCO reads.
const clusterMachineConfiguration = "cluster"

// osImageStreamName is the OSImageStream upstream's render controller reads.
const osImageStreamName = "cluster"

// DefaultControllerConfig is the ControllerConfig upstream's controller
// writes and its server reads.
const DefaultControllerConfig = "machine-config-controller"

// origin is the Source of every object read from the API server, so errors
// read "kubernetes: MachineConfig/99-worker-ssh: $.spec.config...: ...".
const origin = "kubernetes"

// Mode chooses what a pool serves.
type Mode string

const (
	// ModeSelf renders each pool from the MachineConfigs its selector
	// picks, with the renderer the directory source uses: replicas given
	// the same objects serve the same bytes.
	ModeSelf Mode = "self"
	// ModePool serves the rendered MachineConfig the pool names, as
	// upstream's server does, re-encoded at the lowest spec that holds it.
	ModePool Mode = "pool"
)

// ParseMode reads a --render-mode value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeSelf, ModePool:
		return m, nil
	case "":
		return ModeSelf, nil
	}
	return "", fmt.Errorf("render mode %q: want %s or %s", s, ModeSelf, ModePool)
}

// Config configures a Source.
type Config struct {
	// REST reaches the API server (see RESTConfig).
	REST *rest.Config
	Mode Mode // default ModeSelf
	// Options bound the rendered spec in both modes.
	Options render.Options
	// ControllerConfig names the ControllerConfig to read (default
	// DefaultControllerConfig); others are ignored. A cluster without the
	// ControllerConfig resource is served without one.
	ControllerConfig string
	// SkewPolicy makes the cluster's MachineConfiguration the gate's
	// boot-image skew policy, read as a policy file holding the object is
	// (see skewgate.ParsePolicy; no object sets no policy). Off when the
	// policy comes from a file; ignored when the API server does not serve
	// the resource. Optional: trouble reading it never fails the pools.
	SkewPolicy bool
	// SyncWait bounds how long Load waits for the first full list of every
	// resource before it fails (default 30s); the source signals a change
	// once synced, so a slow start only delays the first render.
	SyncWait time.Duration
	Logger   *slog.Logger
	// Rendered, when set, is called in self mode with each pool's result
	// as soon as Load has rendered it anew, from the rendering goroutines,
	// before Load returns (see source.Renderer.Render).
	Rendered func(*render.Result)
	// Registerer, when set, receives the source's metrics.
	Registerer prometheus.Registerer
	// QPS and Burst are the source's own client rate to the API server
	// (default 100 and 300, as the controller's): client-go's default, 5
	// a second, lets any steadier stream of MachineConfig changes grow a
	// backlog without bound (self mode reads each changed one).
	QPS   float32
	Burst int
	// BacklogList is how many changed MachineConfigs waiting to be read
	// (self mode) make the source read them all with one LIST rather than
	// a GET each (default DefaultBacklogList).
	BacklogList int
	// Now is the clock the backlog is timed by (default time.Now).
	Now func() time.Time

	// KubeconfigData follows ConfigMap kubeconfig-data in the MCO's
	// namespace (its ca-bundle.crt is the CA of the kubeconfig served to
	// nodes; see KubeconfigCA); a change signals a reload.
	KubeconfigData bool
	// ImageMode serves image-mode pools as upstream's server does: a pool
	// with a MachineOSConfig whose image a succeeded MachineOSBuild built
	// from the served rendered config boots new nodes into that image (see
	// desiredImage). Only with ModePool; ignored when the API server does
	// not serve the resources.
	ImageMode bool
}

// Source is a source.Source over MachineConfigs, MachineConfigPools and the
// ControllerConfig of one cluster. Start (or Watch) runs its informers; Load
// renders from their caches, never from the network.
type Source struct {
	cfg    Config
	client dynamic.Interface
	// meta watches rendered configs' metadata only (self mode).
	meta  metadata.Interface
	disco discoverer

	startOnce sync.Once
	notify    chan struct{}     // capacity 1: a pending change
	monitor                     // the API server's health: log, host, metrics
	cache     render.ParseCache // parsed configs, kept from one load to the next
	fed       fedJSON           // the objects' JSON, kept from one load to the next
	renderer  source.Renderer   // re-renders only the pools whose inputs changed
	backlog                     // MachineConfig changes not read yet (self mode); its Backlog is the source's

	caches
	policy policyCache
}

var (
	_ source.Source  = (*Source)(nil)
	_ source.Lagging = (*Source)(nil)
)

// New checks cfg and prepares the clients; nothing reaches the network until
// Start.
func New(cfg Config) (*Source, error) {
	if cfg.REST == nil {
		return nil, errors.New("kubernetes source: no REST config")
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeSelf
	}
	if _, err := ParseMode(string(cfg.Mode)); err != nil {
		return nil, err
	}
	if _, err := cfg.Options.Normalized(); err != nil {
		return nil, err
	}
	if cfg.ControllerConfig == "" {
		cfg.ControllerConfig = DefaultControllerConfig
	}
	if cfg.SyncWait <= 0 {
		cfg.SyncWait = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.QPS <= 0 {
		cfg.QPS = 100
	}
	if cfg.Burst <= 0 {
		cfg.Burst = 300
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	rc := rest.CopyConfig(cfg.REST)
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	if rc.UserAgent == "" {
		rc.UserAgent = "mcs"
	}
	disco, err := newDiscoverer(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes source: %w", err)
	}
	s := &Source{}
	observed := rest.CopyConfig(rc)
	observed.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &observer{s: s, next: rt} })
	client, meta, err := DynamicClients(observed)
	if err != nil {
		return nil, fmt.Errorf("kubernetes source: %w", err)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("kubernetes source: %w", err)
	}
	log := cfg.Logger.With("source", "kubernetes")
	*s = Source{
		cfg:    cfg,
		client: client,
		meta:   meta,
		disco:  disco,
		notify: make(chan struct{}, 1),
		caches: caches{synced: make(chan struct{}), controllerConfigName: cfg.ControllerConfig},
	}
	s.monitor = monitor{m: m, log: log, host: rc.Host, signal: s.signal, policy: &s.policy}
	s.backlog = backlog{now: cfg.Now, gauge: m.backlog.Set}
	return s, nil
}

// DynamicClients are rc's two clients of any resource: of objects whole,
// and of their metadata only (listing rendered configs without their
// hundreds of kilobytes each).
func DynamicClients(rc *rest.Config) (dynamic.Interface, metadata.Interface, error) {
	client, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	meta, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	return client, meta, nil
}

func (s *Source) String() string {
	return fmt.Sprintf("kubernetes %s (render mode %s)", s.host, s.cfg.Mode)
}

// Start runs the informers until ctx ends; calling it again does nothing.
// It returns at once: the caches fill in the background, reconnecting with
// backoff, and a change is signalled once they have.
func (s *Source) Start(ctx context.Context) {
	s.startOnce.Do(func() { go s.run(ctx) })
}

// Watch starts the source if needed and passes its changes on until ctx
// ends: objects that change what is served, the first sync, and the API
// connection failing or coming back.
func (s *Source) Watch(ctx context.Context, changed chan<- struct{}) {
	s.Start(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.notify:
		}
		select {
		case changed <- struct{}{}:
		default:
		}
	}
}

func (s *Source) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Load renders from the informer caches. While the API server is
// unreachable it fails (the server keeps its last good snapshot and reports
// the error) even though the caches still hold the last state: a replica
// must say when what it serves may be stale.
func (s *Source) Load(ctx context.Context) (*source.Input, error) {
	if !s.Synced() {
		t := time.NewTimer(s.cfg.SyncWait)
		defer t.Stop()
		select {
		case <-s.synced:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			return nil, &notSyncedError{Host: s.host, Wait: s.cfg.SyncWait, Last: s.health.get().err}
		}
	}
	if h := s.health.get(); h.err != nil {
		return nil, &apiError{Host: s.host, Since: h.since, Err: h.err}
	}
	load := s.loadSelf
	if s.cfg.Mode == ModePool {
		load = s.loadPool
	}
	in, err := load()
	if err != nil {
		return nil, err
	}
	in.SkewPolicy, in.SkewPolicyError = s.skewPolicy()
	return in, nil
}

// Objects returns a store's objects sorted by name, so every replica
// decodes (and reports) them in the same order; none for a nil store (a
// resource not served).
func Objects(st cache.Store) []*unstructured.Unstructured {
	if st == nil {
		return nil
	}
	return sorted(st.List())
}

// sorted are the objects of objs sorted by name.
func sorted(objs []any) []*unstructured.Unstructured {
	type named struct {
		name string
		u    *unstructured.Unstructured
	}
	list := make([]named, 0, len(objs))
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			list = append(list, named{u.GetName(), u})
		}
	}
	slices.SortFunc(list, func(a, b named) int { return strings.Compare(a.name, b.name) })
	out := make([]*unstructured.Unstructured, len(list))
	for i, n := range list {
		out[i] = n.u
	}
	return out
}

// loadSelf renders every pool from the cached objects, through the same
// loader, parse cache and per-pool render loop as the directory source.
func (s *Source) loadSelf() (*source.Input, error) {
	l := render.Loader{Cache: &s.cache, FromAPIServer: true}
	fed := s.fed.begin()
	mcs, err := inputs(s.mcs) // not the rendered configs: see isRendered
	if err != nil {
		return nil, err
	}
	for _, u := range mcs {
		if err := fed.feed(&l, u, nil); err != nil {
			return nil, err
		}
	}
	for _, u := range Objects(s.pools) {
		if err := fed.feed(&l, u, renderedPart); err != nil {
			return nil, err
		}
	}
	for _, u := range []*unstructured.Unstructured{s.controllerConfig(), get(s.streams, osImageStreamName)} {
		if u == nil {
			continue
		}
		if err := feed(&l, u); err != nil {
			return nil, err
		}
	}
	set, err := l.Set()
	if err != nil {
		return nil, err
	}
	fed.done()
	in := s.renderer.Render(set, s.cfg.Options, s.cfg.Rendered)
	in.Warnings = source.Notices(set)
	return in, nil
}

// renderedPart is what a render reads of a pool (self mode): the pool
// without its status and the rendered config it names, which every write
// of the controller changes, nor the metadata every write bumps. A pool a
// worker edit pointed elsewhere then reads as it did, and the loader finds
// its decoding again (render.ParseCache) rather than decoding each pool.
func renderedPart(pool *unstructured.Unstructured) *unstructured.Unstructured {
	out := make(map[string]any, len(pool.Object))
	for k, v := range pool.Object {
		out[k] = v
	}
	delete(out, "status")
	if spec, ok := pool.Object["spec"].(map[string]any); ok {
		out["spec"] = without(spec, "configuration")
	}
	if meta, ok := pool.Object["metadata"].(map[string]any); ok {
		out["metadata"] = without(meta, "resourceVersion", "generation", "managedFields")
	}
	return &unstructured.Unstructured{Object: out}
}

// without is a shallow copy of m without keys.
func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !slices.Contains(keys, k) {
			out[k] = v
		}
	}
	return out
}

// feed hands one object to the loader as JSON. The name given carries no
// extension, so no object is ever read as Butane.
func feed(l *render.Loader, u *unstructured.Unstructured) error {
	js, err := json.Marshal(u.Object)
	if err != nil {
		return fmt.Errorf("%s: %s/%s: encoding: %w", origin, u.GetKind(), u.GetName(), err)
	}
	l.Data(origin, js)
	return nil
}

// fedJSON keeps the JSON of the objects fed to the last load, by the
// object's version: the API server gives an object a new resourceVersion
// with every change of its content, so an object of the same kind, name,
// uid and resourceVersion has the same JSON, and a load encodes only the
// objects that changed (a worker MachineConfig is a few hundred
// kilobytes; a cluster of a hundred pools has two hundred objects more).
type fedJSON struct {
	mu   sync.Mutex
	last map[fedKey][]byte
}

type fedKey struct{ kind, name, uid, resourceVersion string }

// fedLoad is one load's feeding: what it fed is what the next one keeps.
type fedLoad struct {
	f    *fedJSON
	next map[fedKey][]byte
}

func (f *fedJSON) begin() fedLoad { return fedLoad{f: f, next: map[fedKey][]byte{}} }

// feed is feed(l, u), or of part(u) when part is not nil, with the JSON
// from the last load when u is the same version; the loader reads the
// bytes and keeps none of them.
func (fl fedLoad) feed(l *render.Loader, u *unstructured.Unstructured, part func(*unstructured.Unstructured) *unstructured.Unstructured) error {
	k := fedKey{u.GetKind(), u.GetName(), string(u.GetUID()), u.GetResourceVersion()}
	fl.f.mu.Lock()
	js, ok := fl.f.last[k]
	fl.f.mu.Unlock()
	if !ok || k.resourceVersion == "" {
		fed := u
		if part != nil {
			fed = part(u)
		}
		var err error
		if js, err = json.Marshal(fed.Object); err != nil {
			return fmt.Errorf("%s: %s/%s: encoding: %w", origin, u.GetKind(), u.GetName(), err)
		}
	}
	fl.next[k] = js
	l.Data(origin, js)
	return nil
}

// done makes this load's objects the ones the next load keeps.
func (fl fedLoad) done() {
	fl.f.mu.Lock()
	defer fl.f.mu.Unlock()
	fl.f.last = fl.next
}

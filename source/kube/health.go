package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ignition-mcs/mcs/render"
)

// APIError is a Load while the API server cannot be reached (or refuses the
// source): what the caches hold may be stale, so it is not rendered.
type APIError struct {
	Host  string
	Since time.Time // the first failure of this outage
	Err   error     // the latest failure
}

func (e *APIError) Error() string {
	return fmt.Sprintf("kubernetes %s: failing since %s: %v", e.Host, e.Since.UTC().Format(time.RFC3339), e.Err)
}

func (e *APIError) Unwrap() error { return e.Err }

// health is the state of the connection to the API server, per resource
// (and "discovery"): a resource fails when a request for it fails and
// recovers when one succeeds.
type health struct {
	mu      sync.Mutex
	failing map[string]error
	since   time.Time
}

type healthState struct {
	err   error // every failing resource's latest error, or nil
	since time.Time
}

func (h *health) get() healthState {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.failing) == 0 {
		return healthState{}
	}
	keys := make([]string, 0, len(h.failing))
	for k := range h.failing {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	errs := make([]error, len(keys))
	for i, k := range keys {
		errs[i] = h.failing[k]
	}
	return healthState{errors.Join(errs...), h.since}
}

// set records a failure and reports whether all was well before it.
func (h *health) set(key string, err error) (wasHealthy bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	wasHealthy = len(h.failing) == 0
	if wasHealthy {
		h.failing, h.since = map[string]error{}, time.Now()
	}
	h.failing[key] = err
	return wasHealthy
}

// clear records a success and reports whether all is well now, and
// whether this success ended an outage.
func (h *health) clear(key string) (healthy, recovered bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, was := h.failing[key]
	delete(h.failing, key)
	healthy = len(h.failing) == 0
	return healthy, was && healthy
}

func (s *Source) failed(key string, err error) {
	s.m.errors.Inc()
	if s.health.set(key, err) {
		s.m.up.Set(0)
		s.log.Warn("kubernetes API failing; the last good render keeps serving", "host", s.host, "err", err)
		s.signal()
	} else {
		s.log.Debug("kubernetes API still failing", "host", s.host, "err", err)
	}
}

func (s *Source) succeeded(key string) {
	healthy, recovered := s.health.clear(key)
	if healthy {
		s.m.up.Set(1)
	}
	if recovered {
		s.log.Info("kubernetes API reachable again", "host", s.host)
		s.signal()
	}
}

// watchFailed is every informer's watch error handler: it sees what the
// API server answered (forbidden, not found, a failed list). The reflector
// itself relists and rewatches with backoff.
func (s *Source) watchFailed(gvr schema.GroupVersionResource, err error) {
	// A watch the server closed, or whose resource version expired, is
	// routine: the reflector resumes or relists.
	if errors.Is(err, io.EOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return
	}
	if apierrors.IsNotFound(err) {
		err = fmt.Errorf("%w (are the MachineConfig CRDs installed?)", err)
	}
	s.failed(gvr.Resource, fmt.Errorf("%s: %w", gvr.Resource, err))
}

// policyWatchFailed is the skew policy informer's watch error handler:
// the policy is optional, so its trouble is the policy's, shown in /status
// with it, and never fails the pools' render.
func (s *Source) policyWatchFailed(err error) {
	if errors.Is(err, io.EOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return
	}
	if s.policy.setWatchErr(fmt.Errorf("%s: reading MachineConfiguration/%s: %w", Origin, ClusterMachineConfiguration, err)) {
		s.log.Warn("the cluster's skew policy cannot be read; the last one read stays in force", "err", err)
		s.signal()
	}
}

// observePolicy clears the skew policy's read error once a request for it
// succeeds again.
func (s *Source) observePolicy(req *http.Request, resp *http.Response, err error) {
	if err == nil && resp.StatusCode < 300 && req.Context().Err() == nil && s.policy.setWatchErr(nil) {
		s.log.Info("the cluster's skew policy is read again")
		s.signal()
	}
}

// observer sees every request the informers make. It is how an outage is
// noticed: a reflector retries a watch refused at the connection on its own,
// without telling its error handler, and its successful rewatch is the
// only sign that the resource is followed again.
type observer struct {
	s    *Source
	next http.RoundTripper
}

func (o *observer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := o.next.RoundTrip(req)
	key := resourceOf(req.URL.Path)
	if key == MachineConfigurations.Resource {
		o.s.observePolicy(req, resp, err)
		return resp, err
	}
	switch {
	case key == "" || req.Context().Err() != nil:
		// Not ours, or cancelled by the source shutting down.
	case err != nil:
		o.s.failed(key, fmt.Errorf("%s: %w", key, err))
	case resp.StatusCode >= 500:
		o.s.failed(key, fmt.Errorf("%s: %s %s: %s", key, req.Method, req.URL.Path, resp.Status))
	case resp.StatusCode < 300:
		o.s.succeeded(key)
	}
	// Other refusals (403, 404, 410) reach the reflector, and from it
	// watchFailed, which says more than the status line.
	return resp, err
}

// resourceOf is the resource a request path is for, or "" when it is not
// one the source reads.
func resourceOf(path string) string {
	for _, gvr := range []schema.GroupVersionResource{MachineConfigs, MachineConfigPools, ControllerConfigs, MachineConfigurations} {
		rest, ok := strings.CutPrefix(path, "/apis/"+gvr.GroupVersion().String()+"/")
		if !ok {
			continue
		}
		if r, _, _ := strings.Cut(rest, "/"); r == gvr.Resource {
			return r
		}
	}
	return ""
}

// served is what of the optional resources the API server serves.
type served struct {
	controllerConfigs     bool
	machineConfigurations bool // looked for only with Config.SkewPolicy
}

// discover waits, with backoff, until the API server serves the
// MachineConfig resources, and reports which optional ones it serves (a
// cluster with MachineConfigs but without the MCO's other CRDs is served
// without them).
func (s *Source) discover(ctx context.Context) (served, error) {
	b := newBackoff()
	for {
		got, err := s.discoverOnce(ctx)
		if err == nil {
			s.succeeded("discovery")
			return got, nil
		}
		s.failed("discovery", err)
		t := time.NewTimer(b.next())
		select {
		case <-ctx.Done():
			t.Stop()
			return served{}, ctx.Err()
		case <-t.C:
		}
	}
}

func (s *Source) discoverOnce(ctx context.Context) (served, error) {
	gv := MachineConfigs.GroupVersion().String()
	list, err := s.disco.ServerResourcesForGroupVersion(ctx, gv)
	if apierrors.IsNotFound(err) {
		return served{}, fmt.Errorf("the API server does not serve %s: install the MachineConfig CRDs: %w", gv, err)
	}
	if err != nil {
		return served{}, fmt.Errorf("discovering %s: %w", gv, err)
	}
	have := map[string]bool{}
	for _, r := range list.APIResources {
		have[r.Name] = true
	}
	var missing []string
	for _, r := range []schema.GroupVersionResource{MachineConfigs, MachineConfigPools} {
		if !have[r.Resource] {
			missing = append(missing, r.Resource)
		}
	}
	if len(missing) > 0 {
		return served{}, fmt.Errorf("the API server does not serve %s.%s: install the MachineConfig CRDs", strings.Join(missing, ", "), gv)
	}
	out := served{controllerConfigs: have[ControllerConfigs.Resource]}
	if !s.cfg.SkewPolicy {
		return out, nil
	}
	// The skew policy is optional: failing to find it must not hold back
	// what nodes are served. It is then not read until a restart, and
	// /status says so.
	gv = MachineConfigurations.GroupVersion().String()
	list, err = s.disco.ServerResourcesForGroupVersion(ctx, gv)
	switch {
	case apierrors.IsNotFound(err):
		return out, nil
	case err != nil:
		s.policy.setUnread(fmt.Errorf("%s: the cluster's skew policy is not read: discovering %s: %w", Origin, gv, err))
		s.log.Warn("the cluster's skew policy is not read", "err", err)
		return out, nil
	}
	for _, r := range list.APIResources {
		out.machineConfigurations = out.machineConfigurations || r.Name == MachineConfigurations.Resource
	}
	return out, nil
}

// apiDiscoverer asks the API server which resources a group version
// serves, as client-go's discovery client does for the one call used here;
// that client's package links every built-in API type (k8s.io/api) into the
// binary and its scheme into the heap.
type apiDiscoverer struct {
	client *http.Client
	base   string // the server's URL, no trailing slash
}

func newDiscoverer(rc *rest.Config) (discoverer, error) {
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, err
	}
	u, _, err := rest.DefaultServerUrlFor(rc)
	if err != nil {
		return nil, err
	}
	return &apiDiscoverer{client: client, base: strings.TrimSuffix(u.String(), "/")}, nil
}

// discoveryTimeout bounds one discovery request, as client-go's discovery
// client does (32 s there): a server that accepts and never answers must not
// stall the source, and an in-cluster config sets no timeout of its own.
const discoveryTimeout = 30 * time.Second

func (d *apiDiscoverer) ServerResourcesForGroupVersion(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error) {
	gv, err := schema.ParseGroupVersion(groupVersion)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.base+"/apis/"+gv.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: gv.Group}, gv.Version)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return nil, fmt.Errorf("GET /apis/%s: %s: %s", gv, resp.Status, msg)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("discovering %s: %w", groupVersion, err)
	}
	return &list, nil
}

// backoff is exponential from 500ms to 30s with ±20% jitter, so replicas
// that lost the API server together do not retry in step (the reflectors'
// own backoff is similar).
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 500 * time.Millisecond} }

func (b *backoff) next() time.Duration {
	d := b.d
	b.d = min(2*b.d, 30*time.Second)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// handler signals a change when an object's key changes: keys leave out
// what cannot change what is served (a pool's status in self mode, the
// ControllerConfig's status), so routine status writes do not re-render.
func (s *Source) handler(gvr schema.GroupVersionResource, key func(*unstructured.Unstructured) string) cache.ResourceEventHandler {
	changed := func() {
		s.m.events.WithLabelValues(gvr.Resource).Inc()
		s.signal()
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { changed() },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*unstructured.Unstructured)
			n, ok2 := newObj.(*unstructured.Unstructured)
			if ok1 && ok2 && key(o) == key(n) {
				return
			}
			changed()
		},
		DeleteFunc: func(any) { changed() },
	}
}

func resourceVersion(u *unstructured.Unstructured) string { return u.GetResourceVersion() }

// poolKey is what of a pool the mode serves from: its selector (self) or
// the rendered config it names (pool).
func (s *Source) poolKey(u *unstructured.Unstructured) string {
	if s.cfg.Mode == ModePool {
		name, _, err := renderedConfig(u)
		if err != nil {
			return "error: " + err.Error()
		}
		return name
	}
	sel, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "machineConfigSelector")
	return jsonKey(sel)
}

// skewPolicyKey is what of a MachineConfiguration the policy comes from.
func skewPolicyKey(u *unstructured.Unstructured) string {
	if u.GetName() != ClusterMachineConfiguration {
		return ""
	}
	spec, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "bootImageSkewEnforcement")
	status, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "bootImageSkewEnforcementStatus")
	return jsonKey([]any{spec, status})
}

func controllerConfigKey(u *unstructured.Unstructured) string {
	spec, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec")
	a := u.GetAnnotations()
	return jsonKey([]any{spec, a[render.AnnotationReleaseImageVersion], a[render.AnnotationControllerConfigVersion]})
}

// jsonKey encodes v deterministically (encoding/json sorts map keys).
func jsonKey(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

// metrics are the source's own; the server's render metrics report what
// the failures cost.
type metrics struct {
	up     prometheus.Gauge
	errors prometheus.Counter
	events *prometheus.CounterVec
	// policyErrors counts versions of the cluster's MachineConfiguration
	// that did not parse as a skew policy.
	policyErrors prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		up: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mcs_kube_api_up",
			Help: "1 when the last request to the Kubernetes API server succeeded, 0 while it is failing."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "mcs_kube_api_errors_total",
			Help: "Failed requests and broken watches to the Kubernetes API server."}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcs_kube_events_total",
			Help: "Object changes that can change what is served, by resource."}, []string{"resource"}),
		policyErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "mcs_kube_skew_policy_errors_total",
			Help: "Versions of the cluster's MachineConfiguration whose skew policy was invalid; the last good one stays in force."}),
	}
	for _, r := range []schema.GroupVersionResource{MachineConfigs, MachineConfigPools, ControllerConfigs, MachineConfigurations} {
		m.events.WithLabelValues(r.Resource)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.up, m.errors, m.events, m.policyErrors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

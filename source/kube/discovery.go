package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// discoverer is the part of the discovery client the source uses.
type discoverer interface {
	ServerResourcesForGroupVersion(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error)
}

// served is what of the optional resources the API server serves.
type served struct {
	controllerConfigs     bool
	osImageStreams        bool
	machineConfigurations bool // looked for only with Config.SkewPolicy
	machineOS             bool // MachineOSConfigs and MachineOSBuilds, with Config.ImageMode
	routes                bool // with Config.ImageMode
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
	if have[OSImageStreams.Resource] && s.cfg.Mode != ModePool {
		out.osImageStreams = mayList(ctx, s.client, s.log, OSImageStreams, "metadata.name="+osImageStreamName)
	}
	if s.cfg.ImageMode && s.cfg.Mode == ModePool {
		out.machineOS = have[MachineOSConfigs.Resource] && have[MachineOSBuilds.Resource]
		out.routes = serves(ctx, s.disco, Routes)
	}
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
		s.policy.setUnread(fmt.Errorf("%s: the cluster's skew policy is not read: discovering %s: %w", origin, gv, err))
		s.log.Warn("the cluster's skew policy is not read", "err", err)
		return out, nil
	}
	for _, r := range list.APIResources {
		out.machineConfigurations = out.machineConfigurations || r.Name == MachineConfigurations.Resource
	}
	return out, nil
}

// mayList says whether this identity may list gvr: false, with a warning,
// when the API server refuses it (a ClusterRole from before the rule was
// added, say), so the source serves without it rather than never syncing.
// Other errors read as yes: the informer retries them.
func mayList(ctx context.Context, client dynamic.Interface, log *slog.Logger, gvr schema.GroupVersionResource, fieldSelector string) bool {
	_, err := resource(client, gvr).List(ctx, metav1.ListOptions{Limit: 1, FieldSelector: fieldSelector})
	if !apierrors.IsForbidden(err) {
		return true
	}
	log.Warn("rendering without "+gvr.Resource+": this identity may not list them (grant get, list, watch on "+gvr.Resource+" as deploy/rbac.yaml does); a pool that names an OS image stream fails to render, the others get the ControllerConfig's images", "err", err)
	return false
}

// serves says whether the API server serves gvr; an error reads as no.
func serves(ctx context.Context, d discoverer, gvr schema.GroupVersionResource) bool {
	list, err := d.ServerResourcesForGroupVersion(ctx, gvr.GroupVersion().String())
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true
		}
	}
	return false
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

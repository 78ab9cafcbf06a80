package kube

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// watchFailed is every informer's watch error handler: it sees what the
// API server answered (forbidden, not found, a failed list). The reflector
// itself relists and rewatches with backoff.
func (s *monitor) watchFailed(gvr schema.GroupVersionResource, err error) {
	if routine(err) {
		return
	}
	if apierrors.IsNotFound(err) {
		err = fmt.Errorf("%w (are the MachineConfig CRDs installed?)", err)
	}
	s.failed(gvr.Resource, fmt.Errorf("%s: %w", gvr.Resource, err))
}

// routine is a watch the server closed, or whose resource version expired:
// the reflector resumes or relists.
func routine(err error) bool {
	return errors.Is(err, io.EOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// policyWatchFailed is the skew policy informer's watch error handler:
// the policy is optional, so its trouble is the policy's, shown in /status
// with it, and never fails the pools' render.
func (s *monitor) policyWatchFailed(err error) {
	if routine(err) {
		return
	}
	if s.policy.setWatchErr(fmt.Errorf("%s: reading MachineConfiguration/%s: %w", origin, clusterMachineConfiguration, err)) {
		s.log.Warn("the cluster's skew policy cannot be read; the last one read stays in force", "err", err)
		s.signal()
	}
}

// observePolicy clears the skew policy's read error once a request for it
// succeeds again.
func (s *monitor) observePolicy(req *http.Request, resp *http.Response, err error) {
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
	for _, gvr := range []schema.GroupVersionResource{MachineConfigs, MachineConfigPools, ControllerConfigs, OSImageStreams, MachineConfigurations,
		ConfigMaps, MachineOSConfigs, MachineOSBuilds, Routes} {
		prefix := "/apis/" + gvr.GroupVersion().String() + "/"
		if gvr.Group == "" {
			prefix = "/api/" + gvr.Version + "/"
		}
		rest, ok := strings.CutPrefix(path, prefix)
		if !ok {
			continue
		}
		if ns, ok := strings.CutPrefix(rest, "namespaces/"); ok {
			_, rest, _ = strings.Cut(ns, "/")
		}
		if r, _, _ := strings.Cut(rest, "/"); r == gvr.Resource {
			return r
		}
	}
	return ""
}

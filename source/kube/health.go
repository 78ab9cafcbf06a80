package kube

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// apiError is a Load while the API server cannot be reached (or refuses the
// source): what the caches hold may be stale, so it is not rendered.
type apiError struct {
	Host  string
	Since time.Time // the first failure of this outage
	Err   error     // the latest failure
}

func (e *apiError) Error() string {
	return fmt.Sprintf("kubernetes %s: failing since %s: %v", e.Host, e.Since.UTC().Format(time.RFC3339), e.Err)
}

func (e *apiError) Unwrap() error { return e.Err }

// notSyncedError is a Load before the informers have listed everything once.
type notSyncedError struct {
	Host string
	Wait time.Duration
	Last error // the last API error seen, if any
}

func (e *notSyncedError) Error() string {
	msg := fmt.Sprintf("kubernetes %s: caches not synced after %s", e.Host, e.Wait)
	if e.Last != nil {
		msg += ": " + e.Last.Error()
	}
	return msg
}

func (e *notSyncedError) Unwrap() error { return e.Last }

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

// monitor watches the connection to the API server and the skew policy's
// reads: it logs, counts and signals a reload when either changes state.
type monitor struct {
	health health
	m      *metrics
	log    *slog.Logger
	host   string
	signal func()
	policy *policyCache
}

func (s *monitor) failed(key string, err error) {
	s.m.errors.Inc()
	if s.health.set(key, err) {
		s.m.up.Set(0)
		s.log.Warn("kubernetes API failing; nothing is rendered anew until it answers, and what is served stays served", "host", s.host, "err", err)
		s.signal()
	} else {
		s.log.Debug("kubernetes API still failing", "host", s.host, "err", err)
	}
}

func (s *monitor) succeeded(key string) {
	healthy, recovered := s.health.clear(key)
	if healthy {
		s.m.up.Set(1)
	}
	if recovered {
		s.log.Info("kubernetes API reachable again", "host", s.host)
		s.signal()
	}
}

package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/ignition-mcs/mcs/skewgate"
)

// policyCache keeps the policy parsed from one version of the cluster's
// MachineConfiguration, so an unchanged object yields the same *Policy (the
// reloader swaps the gate's only on a new one) and a bad one is reported
// once. The resource is optional: its trouble (refused, unreachable, not
// discoverable) is reported with the policy, never held against the pools.
type policyCache struct {
	mu       sync.Mutex
	synced   cache.InformerSynced // nil until the informer exists
	version  string               // the object's resourceVersion; "-" when there is none
	policy   *skewgate.Policy
	lastGood *skewgate.Policy
	err      error // why the current version was refused
	watchErr error // the informer's last list or watch failure, until one succeeds
	unread   error // why the resource is not read at all
}

func (c *policyCache) setUnread(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unread = err
}

// setWatchErr records a list or watch failure (nil: one succeeded) and
// reports whether that changed anything.
func (c *policyCache) setWatchErr(err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := (c.watchErr == nil) != (err == nil)
	c.watchErr = err
	return changed
}

// skewPolicy is the cluster's policy, or nil when the source does not read
// one (yet). An invalid object (the CRD's validation makes one unlikely)
// keeps the last good policy in force, and is logged, counted and returned
// as the error while it stands; so are failures to read the resource.
func (s *Source) skewPolicy() (*skewgate.Policy, error) {
	c := &s.policy
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.mcfgs == nil || c.synced == nil || !c.synced() {
		// Not read, or not listed yet: its first list signals a reload.
		return nil, errors.Join(c.unread, c.watchErr)
	}
	version, raw := "-", []byte("{}")
	if o, ok, _ := s.mcfgs.GetByKey(clusterMachineConfiguration); ok {
		if u, ok := o.(*unstructured.Unstructured); ok {
			version = u.GetResourceVersion()
			var err error
			if raw, err = json.Marshal(u.Object); err != nil {
				raw = nil
			}
		}
	}
	if version != c.version || (c.policy == nil && c.err == nil) {
		c.version = version
		c.parse(s, raw)
	}
	return c.policy, errors.Join(c.err, c.watchErr)
}

func (c *policyCache) parse(s *Source, raw []byte) {
	p, err := skewgate.ParsePolicy(raw)
	if err != nil {
		s.m.policyErrors.Inc()
		kept := "the last good skew policy stays in force"
		if c.lastGood == nil {
			kept = "no skew policy of the cluster was ever valid: the gate's own (--skew-policy, or the default) stays in force"
		}
		c.err = fmt.Errorf("%s: MachineConfiguration/%s (resourceVersion %s): %w; %s",
			origin, clusterMachineConfiguration, c.version, err, kept)
		s.log.Error("skew policy not changed", "err", c.err)
		c.policy = c.lastGood
		return
	}
	c.err = nil
	if c.lastGood != nil && samePolicy(p, c.lastGood) {
		p = c.lastGood // a write elsewhere in the object: nothing new to apply
	}
	c.policy, c.lastGood = p, p
}

func samePolicy(a, b *skewgate.Policy) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

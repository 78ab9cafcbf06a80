package kube

import (
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/skewgate"
)

// policyCache keeps the policy parsed from one version of the cluster's
// MachineConfiguration, so an unchanged object yields the same *Policy (the
// reloader swaps the gate's only on a new one) and a bad one is reported once.
type policyCache struct {
	mu       sync.Mutex
	version  string // the object's resourceVersion; "-" when there is none
	policy   *skewgate.Policy
	lastGood *skewgate.Policy
	err      error // why the current version was refused
}

// skewPolicy is the cluster's policy, or nil when the source does not read
// one. An invalid object (the CRD's validation makes one unlikely) keeps the
// last good policy in force, and is logged, counted and returned as the
// error while it stands.
func (s *Source) skewPolicy() (*skewgate.Policy, error) {
	if s.mcfgs == nil {
		return nil, nil
	}
	c := &s.policy
	c.mu.Lock()
	defer c.mu.Unlock()
	version, raw := "-", []byte("{}")
	if o, ok, _ := s.mcfgs.GetByKey(ClusterMachineConfiguration); ok {
		if u, ok := o.(*unstructured.Unstructured); ok {
			version = u.GetResourceVersion()
			var err error
			if raw, err = json.Marshal(u.Object); err != nil {
				raw = nil
			}
		}
	}
	if version == c.version && (c.policy != nil || c.err != nil) {
		return c.policy, c.err
	}
	c.version = version
	p, err := skewgate.ParsePolicy(raw)
	if err != nil {
		s.m.policyErrors.Inc()
		c.err = fmt.Errorf("%s: MachineConfiguration/%s (resourceVersion %s): %w; the last good skew policy stays in force",
			Origin, ClusterMachineConfiguration, version, err)
		s.log.Error("skew policy not changed", "err", c.err)
		c.policy = c.lastGood
		return c.policy, c.err
	}
	c.err = nil
	if c.lastGood != nil && samePolicy(p, c.lastGood) {
		p = c.lastGood // a write elsewhere in the object: nothing new to apply
	}
	c.policy, c.lastGood = p, p
	return p, nil
}

func samePolicy(a, b *skewgate.Policy) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// Package status records how renders went, the nodes kept waiting and who fetched what, and shows it to people as the /status document and page.
package status

import (
	"fmt"
	"maps"
	"time"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/nodefail"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/fetchlog"
	"github.com/ignition-mcs/mcs/skewgate"
)

// Status is the /status document: what is served, why at that spec, and
// what went wrong last. It holds no config contents and no credentials.
type Status struct {
	Ready  bool   `json:"ready"`
	Source string `json:"source,omitempty"`
	// MaxSpec is the spec ceiling renders are held to, and why.
	MaxSpec     string           `json:"maxSpec,omitempty"`
	Generation  uint64           `json:"generation"`
	RenderedAt  *time.Time       `json:"renderedAt,omitempty"`
	BuildTime   string           `json:"buildTime,omitempty"`
	LastAttempt *time.Time       `json:"lastAttempt,omitempty"`
	LastError   *RenderError     `json:"lastError"`
	Pools       []PoolStatus     `json:"pools"`
	Conditions  []Condition      `json:"conditions"`
	SkewPolicy  *skewgate.Policy `json:"skewPolicy,omitempty"`
	// SkewPolicyError is why the source's newest skew policy (a cluster's
	// MachineConfiguration) was refused; the one shown stays in force.
	SkewPolicyError string `json:"skewPolicyError,omitempty"`
	// PoolsRerendered and PoolsCarried count, for the served render, the
	// pools encoded anew and those carried over unchanged from the one before.
	PoolsRerendered int `json:"poolsRerendered"`
	PoolsCarried    int `json:"poolsCarried"`
	// ReloadStuck says a load has run past the reload timeout, and what it
	// was reading: "reload stuck since T, reading FILE; …".
	ReloadStuck string `json:"reloadStuck,omitempty"`
	// Backlog is what the source has seen change and not read yet (a
	// Kubernetes source); absent for a source that reads all at once.
	Backlog *SourceBacklog `json:"backlog,omitempty"`
	// Warnings are what the newest load skipped: files that are not
	// regular (FIFOs, sockets, devices), directory symlink loops.
	Warnings []string `json:"warnings,omitempty"`
	// Waiting lists what kept nodes waiting lately: answers Ignition
	// retries (docs/reliability.md), by cause and pool.
	Waiting []Waiting `json:"waiting"`
	// UnknownPools counts requests for pool names the server does not
	// serve, by name (at most 8, the rest as "(other)"), until the pool
	// exists or 10 minutes after the last: a node whose pool is not
	// created yet, or anyone guessing names. Kept apart from waiting, so
	// guesses raise no condition and crowd out no real pool's cause.
	UnknownPools []Waiting `json:"unknownPools"`
	// TLS is the served certificate and until when a pointer config
	// trusting each CA boots a node (with a TLS listener).
	TLS *TLSStatus `json:"tls,omitempty"`
	// NodeFailures are the first-boot failures nodes reported lately
	// (POST /v1/node-failure), by pool, node and stage.
	NodeFailures nodefail.Status `json:"nodeFailures"`
	// VersionOverride says what ?version= does, for whoever reads this
	// while debugging with it.
	VersionOverride string `json:"versionOverride"`
}

// versionOverride is /status's note on ?version=.
const versionOverride = "?version=X.Y.Z serves exactly spec X.Y.Z as a node reading it would get it: through the skew gate, the skew stub included; the render CLI shows a pool's config without the gate"

// PoolStatus describes one pool of the served snapshot.
type PoolStatus struct {
	Name     string            `json:"name"`
	Rendered string            `json:"rendered"`
	Spec     convert.Version   `json:"spec"`
	MinSpec  convert.Version   `json:"minSpec"`
	Reasons  []render.Reason   `json:"reasons"`
	Servable []convert.Version `json:"servable"`
	Blocked  map[string]string `json:"blocked,omitempty"`
	// Error is why the pool's newest render failed; it serves an older one.
	Error string `json:"error,omitempty"`
	// ErrorSince is when the pool's renders began failing.
	ErrorSince *time.Time `json:"errorSince,omitempty"`
	// Overrides are what a later MachineConfig replaced of an earlier
	// one's in the served render (a file, unit, user, kernelType,
	// osImageURL ...): the later by name wins, as upstream merges.
	Overrides []render.Override `json:"overrides,omitempty"`
	// Fetches are what clients fetched of this pool's rendered configs,
	// the one served now and the last few before it.
	Fetches []fetchlog.RenderedStatus `json:"fetches"`
}

// Condition follows Kubernetes' condition shape.
type Condition struct {
	Type    string             `json:"type"`
	Status  string             `json:"status"`
	Reason  string             `json:"reason"`
	Message string             `json:"message"`
	Recent  []skewgate.Blocked `json:"recent,omitempty"`
}

// Status returns the current status document.
func (rec *Recorder) Status() Status {
	st := Status{Source: rec.source, MaxSpec: rec.maxSpec, Pools: []PoolStatus{}, Conditions: []Condition{}, Waiting: rec.waiting.list(false), UnknownPools: rec.waiting.list(true), VersionOverride: versionOverride}
	rec.mu.Lock()
	st.LastError = rec.lastErr
	st.SkewPolicyError = rec.policyErr
	st.Warnings = rec.warnings
	if rec.stuck != nil {
		st.ReloadStuck = rec.stuck.Message()
	}
	if !rec.lastTry.IsZero() {
		t := rec.lastTry
		st.LastAttempt = &t
	}
	failingSince := maps.Clone(rec.failingSince)
	rec.mu.Unlock()
	st.TLS = rec.cert.tls()
	st.NodeFailures.Reports = []nodefail.Entry{}
	if rec.failures != nil {
		st.NodeFailures = rec.failures()
	}
	if snap := rec.served(); snap != nil {
		st.Ready, st.Generation = true, snap.Generation
		t := snap.Built
		st.RenderedAt, st.BuildTime = &t, snap.BuildTime.String()
		st.PoolsRerendered, st.PoolsCarried = snap.Rerendered, snap.Carried
		for _, name := range snap.Names() {
			p := snap.Pool(name)
			why, _ := snap.Failed(name)
			ps := PoolStatus{Name: name, Rendered: p.Result().Name, Spec: p.Result().Spec, MinSpec: p.Result().MinSpec,
				Reasons: p.Result().Reasons, Servable: []convert.Version{}, Error: why, Overrides: p.Result().Overrides}
			if ps.Reasons == nil {
				ps.Reasons = []render.Reason{}
			}
			if since, ok := failingSince[name]; ok && ps.Error != "" {
				ps.ErrorSince = &since
			}
			ps.Fetches = rec.fetches.Status(name, p.Fetches.Load())
			for _, v := range convert.OutputVersions {
				if p.Response(v) != nil {
					ps.Servable = append(ps.Servable, v)
				} else if err := p.Blocked(v); err != nil {
					if ps.Blocked == nil {
						ps.Blocked = map[string]string{}
					}
					ps.Blocked[v.String()] = err.Error()
				}
			}
			st.Pools = append(st.Pools, ps)
		}
	}
	st.Conditions = append(st.Conditions, renderCondition(st))
	stuckCond := Condition{Type: "ReloadStuck", Status: "False", Reason: "ReloadsFinish", Message: "no load of the source is running past the reload timeout"}
	if st.ReloadStuck != "" {
		stuckCond.Status, stuckCond.Reason, stuckCond.Message = "True", "ReloadTimedOut", st.ReloadStuck
	}
	st.Conditions = append(st.Conditions, stuckCond)
	waitCond := Condition{Type: "NodesWaiting", Status: "False", Reason: "NoneWaiting", Message: "no node was answered a retried refusal lately"}
	if len(st.Waiting) > 0 {
		w := st.Waiting[0]
		waitCond.Status, waitCond.Reason = "True", "RetriedRefusals"
		waitCond.Message = fmt.Sprintf("nodes are retrying; latest: %s (%d) %s: %s; see waiting", w.Cause, w.Code, forPool(w.Pool), w.Message)
	}
	st.Conditions = append(st.Conditions, waitCond)
	st.Conditions = rec.cert.condition(st.Conditions)
	st.Backlog, st.Conditions = backlogStatus(rec.backlog, st.Conditions)
	if g := rec.gate; g != nil {
		st.SkewPolicy = g.Policy()
		c := Condition{Type: "BootImageSkew", Status: "False", Reason: "NoNodesBlocked", Message: "no node has been refused"}
		if g.Policy().Mode == "None" {
			c.Reason, c.Message = "EnforcementOff", "boot-image skew enforcement is off (mode None): old boot images are admitted"
		}
		if recent := g.Recent(); len(recent) > 0 {
			c.Status, c.Reason = "True", "NodesBlocked"
			c.Message = "nodes were served the skew stub instead of their config; see recent"
			c.Recent = recent
		}
		st.Conditions = append(st.Conditions, c)
	}
	return st
}

// renderCondition is RenderDegraded: whether the newest render is served,
// and if not, what is served instead.
func renderCondition(st Status) Condition {
	c := Condition{Type: "RenderDegraded", Status: "False", Reason: "RenderSucceeded", Message: "the newest render is served"}
	if st.LastError == nil && !st.Ready {
		// Not failed, but nothing served either: no claim of a render.
		c.Reason, c.Message = "FirstRenderRunning", "no render has finished yet: the first is running, and nothing is served until it ends"
	}
	if st.LastError == nil {
		return c
	}
	// Each pool's failure says whether that pool serves a render of
	// before; a failure as a whole leaves the served one in place.
	served := "newest attempt failed: "
	switch {
	case !st.Ready:
		served = "nothing is served: no render has succeeded yet; " + served
	case len(st.LastError.Pools) == 0:
		served = "serving the last good render; " + served
	}
	c.Status, c.Reason, c.Message = "True", "RenderFailed", served+st.LastError.Message
	return c
}

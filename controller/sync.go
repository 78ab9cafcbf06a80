package controller

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// lead renders and writes until ctx (the Lease) ends: once at once, then
// after every change the caches see (debounced) and every Resync.
func (c *Controller) lead(ctx context.Context) {
	c.setLeading(true)
	changed := make(chan struct{}, 1)
	go c.src.Watch(ctx, changed)
	resync := time.NewTicker(c.cfg.Resync)
	defer resync.Stop()
	var last syncState
	for {
		last = c.sync(ctx, last)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-resync.C:
			last = syncState{}
		}
		if !quiet(ctx, changed, c.cfg.Debounce) {
			return
		}
	}
}

// quiet waits until no change has come for d; false when ctx ended.
func quiet(ctx context.Context, changed <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-changed:
			t.Reset(d)
		case <-t.C:
			return true
		}
	}
}

// syncState is what the last sync rendered from and pointed each pool at.
type syncState struct {
	inputs  string
	targets map[string]string // pool → rendered config written
}

// current says whether nothing has changed since: the same inputs, and
// every pool still names the config written for it, which still exists.
// The controller's own writes signal changes too; this keeps them from
// costing a render of every pool each.
func (st syncState) current(c *Controller, inputs string) bool {
	if st.targets == nil || inputs != st.inputs {
		return false
	}
	for pool, target := range st.targets {
		p := c.src.Pool(pool)
		if p == nil || configuration(p) != target || c.src.MachineConfig(target) == nil {
			return false
		}
	}
	return true
}

// inputs keys what renders read: every MachineConfig but the rendered
// ones (owned by a pool), each pool's selector, the ControllerConfig.
func (c *Controller) inputs() string {
	h := sha256.New()
	for _, u := range c.src.MachineConfigs() {
		if !kube.IsRendered(u) {
			fmt.Fprintf(h, "mc %s %s\n", u.GetName(), u.GetResourceVersion())
		}
	}
	sel := c.selectors()
	for _, pool := range slices.Sorted(maps.Keys(sel)) {
		fmt.Fprintf(h, "pool %s %s\n", pool, sel[pool])
	}
	if cc := c.src.ControllerConfigObject(); cc != nil {
		fmt.Fprintf(h, "cc %s\n", cc.GetResourceVersion())
	}
	return string(h.Sum(nil))
}

func configuration(p *unstructured.Unstructured) string {
	n, _, _ := unstructured.NestedString(p.Object, "spec", "configuration", "name")
	return n
}

// sync renders every pool from the caches and writes what differs, unless
// nothing has changed since last (the state it returns). A pool's selector
// that changed while rendering is left alone: the change has signalled
// another render.
func (c *Controller) sync(ctx context.Context, last syncState) syncState {
	if !c.src.Synced() {
		// Nothing to compare the render with yet; the source signals
		// once it has synced.
		return last
	}
	inputs := c.inputs()
	if last.current(c, inputs) {
		return last
	}
	next := syncState{inputs: inputs, targets: map[string]string{}}
	var mu sync.Mutex
	start := time.Now()
	before := c.selectors()
	in, err := c.src.Load(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return syncState{}
		}
		var es *render.Errors
		if errors.As(err, &es) {
			// The objects, not the API, are at fault: no pool renders.
			for _, p := range c.src.PoolNames() {
				c.report(p, c.degrade(ctx, p, before[p], err))
			}
		}
		c.log.Error("cannot render", "err", err)
		c.finishSync(start, err)
		return syncState{}
	}
	after := c.selectors()
	rendered := time.Since(start)
	// Pools are independent: their writes go out side by side, a few at
	// a time, so the last of twenty pools does not wait for the others.
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallelWrites)
	each := func(pool string, f func(key string) error) {
		key, ok := after[pool]
		if !ok || key != before[pool] {
			return
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c.report(pool, f(key))
		}()
	}
	for _, res := range in.Results {
		each(res.Pool, func(key string) error {
			err := c.syncPool(ctx, res, key)
			if err == nil {
				mu.Lock()
				next.targets[res.Pool] = res.Name
				mu.Unlock()
			}
			return err
		})
	}
	for pool, rerr := range in.Failed {
		each(pool, func(key string) error { return c.degrade(ctx, pool, key, rerr) })
	}
	wg.Wait()
	c.log.Debug("synced", "pools", len(after), "render", rendered, "writes", time.Since(start)-rendered)
	c.forgetPools(after)
	if c.cfg.Prune && ctx.Err() == nil {
		if _, err := c.prune(ctx); err != nil {
			c.log.Error("pruning", "err", err)
		}
	}
	c.m.syncSeconds.Observe(time.Since(start).Seconds())
	c.finishSync(start, nil)
	if c.cfg.DryRun || len(next.targets) != len(in.Results) {
		// Nothing written, or not all: the next change renders again.
		return syncState{}
	}
	return next
}

// parallelWrites bounds the pools written at once.
const parallelWrites = 8

// selectors keys every cached pool by its machineConfigSelector.
func (c *Controller) selectors() map[string]string {
	out := map[string]string{}
	for _, name := range c.src.PoolNames() {
		if p := c.src.Pool(name); p != nil {
			out[name] = selectorKey(p)
		}
	}
	return out
}

func selectorKey(pool *unstructured.Unstructured) string {
	sel, _, _ := unstructured.NestedFieldNoCopy(pool.Object, "spec", "machineConfigSelector")
	b, _ := json.Marshal(sel)
	return string(b)
}

// syncPool makes sure the pool's rendered MachineConfig exists with this
// content, points the pool at it, and clears RenderDegraded.
func (c *Controller) syncPool(ctx context.Context, res *render.Result, selKey string) error {
	pool := c.src.Pool(res.Pool)
	if pool == nil {
		return nil // deleted since
	}
	c.setRendered(res)
	if err := c.ensureRendered(ctx, res, pool); err != nil {
		var ce *contentError
		if errors.As(err, &ce) {
			return c.degrade(ctx, res.Pool, selKey, err)
		}
		return err
	}
	// The condition is written over the pool the first write returned, so
	// the second does not conflict with the first.
	latest, err := c.pointPool(ctx, res.Pool, selKey, res.Name, sourceRefs(res.MachineConfigs))
	if err != nil || latest == nil {
		return err
	}
	return c.setCondition(ctx, latest, res.Pool, selKey, condition{status: "False"})
}

// sourceRefs are the pool's spec.configuration.source as OpenShift writes
// it: one reference per MachineConfig, sorted by name.
func sourceRefs(names []string) []any {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	out := make([]any, len(sorted))
	for i, n := range sorted {
		out[i] = map[string]any{"apiVersion": render.APIVersion, "kind": render.KindMachineConfig, "name": n}
	}
	return out
}

// pointPool sets the pool's spec.configuration as OpenShift's render
// controller does, unless it already says so.
func (c *Controller) pointPool(ctx context.Context, pool, selKey, name string, sources []any) (*unstructured.Unstructured, error) {
	return c.patchPool(ctx, nil, pool, selKey, "", func(p *unstructured.Unstructured) map[string]any {
		cur, _, _ := unstructured.NestedString(p.Object, "spec", "configuration", "name")
		curSrc, _, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", "configuration", "source")
		if cur == name && sameJSON(curSrc, sources) {
			return nil
		}
		return map[string]any{"spec": map[string]any{"configuration": map[string]any{"name": name, "source": sources}}}
	}, "pointed pool at "+name)
}

// degrade sets RenderDegraded with the render's error; the pool keeps the
// rendered config it names.
func (c *Controller) degrade(ctx context.Context, pool, selKey string, rerr error) error {
	reason := "RenderFailed"
	if errors.Is(rerr, render.ErrSpecCeiling) {
		reason = "SpecCeilingExceeded"
	}
	msg := fmt.Sprintf("Failed to render configuration for pool %s: %v", pool, rerr)
	c.setDegraded(pool, msg)
	c.log.Warn("pool not rendered; it keeps its rendered config", "pool", pool, "err", rerr)
	return c.setCondition(ctx, nil, pool, selKey, condition{status: "True", reason: reason, message: truncate(msg, maxConditionMessage)})
}

// maxConditionMessage bounds a condition's message: a render can fail on
// hundreds of fields, and the pool object must stay small.
const maxConditionMessage = 16 << 10

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "… (truncated; see the controller's /status)"
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var u, v any
	if json.Unmarshal(x, &u) != nil || json.Unmarshal(y, &v) != nil {
		return false
	}
	return reflect.DeepEqual(u, v)
}

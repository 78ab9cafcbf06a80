package controller

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"

	"github.com/ignition-mcs/mcs/render"
)

// queue holds the names of the pools to write; each is written by one
// worker at a time, and one that fails is retried with backoff, as
// upstream's render controller does.
type queue = workqueue.TypedRateLimitingInterface[string]

// maxRetries is upstream's: after this many failures in a row a pool is
// retried once a minute, so a lasting failure does not spin.
const maxRetries = 15

// newQueue retries a pool after 50ms, doubling to at most 5s (upstream:
// 5ms doubling to 1000s): a transient failure, such as a permission being
// restored, lands within seconds. The overall bucket is client-go's default.
func newQueue() queue {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedMaxOfRateLimiter(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 5*time.Second),
			workqueue.DefaultTypedControllerRateLimiter[string](),
		),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "mcs-controller"})
}

// lead renders and writes until ctx (the Lease) ends: once at once, then
// after every change the caches see (debounced) and every Resync. Renders
// happen here, all pools at once (a pool whose content key is unchanged
// keeps its render); the writes go through the queue, Workers pools at a
// time.
func (c *Controller) lead(ctx context.Context) {
	c.setLeading(true)
	q := newQueue()
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.processNext(ctx, q) {
			}
		}()
	}
	defer func() { q.ShutDown(); wg.Wait() }()
	changed := make(chan struct{}, 1)
	go c.src.Watch(ctx, changed)
	resync := time.NewTicker(c.cfg.Resync)
	defer resync.Stop()
	var pruneTick <-chan time.Time
	if c.cfg.Prune {
		t := time.NewTicker(max(c.cfg.PruneGrace/4, 100*time.Millisecond))
		defer t.Stop()
		pruneTick = t.C
	}
	for {
		c.plan(ctx, q)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-c.guards.notify:
		case <-resync.C:
		case <-pruneTick:
			if _, err := c.pruner.prune(ctx); err != nil && ctx.Err() == nil {
				c.log.Error("pruning", "err", err)
			}
			continue
		}
		if !quiet(ctx, changed, c.guards.notify, c.cfg.Debounce) {
			return
		}
	}
}

// quiet waits until no change has come for d; false when ctx ended.
func quiet(ctx context.Context, changed, guards <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-changed:
			t.Reset(d)
		case <-guards:
			t.Reset(d)
		case <-t.C:
			return true
		}
	}
}

// target is what the last render says a pool should be: its render, or the
// error that keeps it where it is.
type target struct {
	res    *render.Result
	err    error
	selKey string // the selector it was rendered with
}

// key is the content key of the target: the render's (what it read, so
// equal keys are equal renders), or the error's text.
func (t target) key() string {
	if t.res != nil {
		return string(t.res.Key[:])
	}
	if t.err != nil {
		return "error: " + t.err.Error()
	}
	return ""
}

// plans are the last render of every pool and what the workers made of it.
type plans struct {
	mu      sync.Mutex
	targets map[string]target
	done    map[string]string // pool → the key of the target it was last written for
	pass    *renderPass       // the render under way, if any
}

// renderPass is one render of every pool: the pools it queued as soon as
// each rendered, with the key of the target each was queued for.
type renderPass struct {
	q      queue
	before map[string]string // the pools' selector keys as the render began
	sent   map[string]string
}

func (p *plans) get(pool string) (target, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.targets[pool]
	return t, ok
}

func (p *plans) finished(pool, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		p.done = map[string]string{}
	}
	p.done[pool] = key
}

func (p *plans) begin(pass *renderPass) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pass = pass
}

// plan renders (the renderer renders again only the pools whose content key
// changed) and queues every pool not yet written for its target's key, or
// no longer pointing where it was. A pool rendered anew is queued as soon
// as its render ends (see rendered): its writes go on while the others
// render.
func (c *Controller) plan(ctx context.Context, q queue) {
	if !c.src.Synced() || !c.guards.hasSynced() {
		// Nothing to compare the render with yet; each signals once synced.
		return
	}
	pass := &renderPass{q: q, before: c.selectors(), sent: map[string]string{}}
	c.plans.begin(pass)
	ok := c.render(ctx, pass.before)
	c.plans.mu.Lock()
	defer c.plans.mu.Unlock()
	c.plans.pass = nil
	if !ok {
		return
	}
	for pool, t := range c.plans.targets {
		if key, sent := pass.sent[pool]; sent && key == t.key() {
			continue // queued when it rendered
		}
		if c.plans.done[pool] != t.key() || !c.pointsAt(pool, t) {
			q.Add(pool)
		}
	}
}

// rendered is told of each pool rendered anew during a render (from the
// rendering goroutines) and queues it at once with that render as its
// target, unless its selector changed since the render began (that change
// renders again) or it was written for that render already (plan decides).
func (c *Controller) rendered(res *render.Result) {
	c.plans.mu.Lock()
	defer c.plans.mu.Unlock()
	pass := c.plans.pass
	if pass == nil {
		return // a load that is not a render of the leader's
	}
	p := c.src.Pool(res.Pool)
	if p == nil || selectorKey(p) != pass.before[res.Pool] {
		return
	}
	t := target{res: res, selKey: pass.before[res.Pool]}
	if c.plans.done[res.Pool] == t.key() {
		return
	}
	if c.plans.targets == nil {
		c.plans.targets = map[string]target{}
	}
	c.plans.targets[res.Pool] = t
	pass.sent[res.Pool] = t.key()
	pass.q.Add(res.Pool)
}

// pointsAt says whether the pool still names its rendered config, which
// still exists.
func (c *Controller) pointsAt(pool string, t target) bool {
	if t.res == nil {
		return true
	}
	p := c.w.last.ahead(c.src.Pool(pool))
	return p != nil && configuration(p) == t.res.Name && c.src.MachineConfig(t.res.Name) != nil
}

// render renders every pool from the caches into c.plans, given the
// pools' selector keys before it began; false when
// nothing could be rendered (the API server, not the objects, at fault).
// A pool whose selector changed while rendering gets no target: the change
// has signalled another render.
func (c *Controller) render(ctx context.Context, before map[string]string) bool {
	start := time.Now()
	in, err := c.src.Load(ctx)
	targets := map[string]target{}
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		c.book.finishSync(start, err)
		c.log.Error("cannot render", "err", err)
		var es *render.Errors
		if !errors.As(err, &es) {
			return false
		}
		// The objects are at fault: no pool renders.
		for pool, key := range before {
			targets[pool] = target{err: err, selKey: key}
		}
	} else {
		after := c.selectors()
		keep := func(pool string) (string, bool) {
			key, ok := after[pool]
			return key, ok && key == before[pool]
		}
		for _, res := range in.Results {
			if key, ok := keep(res.Pool); ok {
				targets[res.Pool] = target{res: res, selKey: key}
			}
		}
		for pool, rerr := range in.Failed {
			if key, ok := keep(pool); ok {
				targets[pool] = target{err: rerr, selKey: key}
			}
		}
		c.book.forgetPools(after)
		c.gate.reconc.keep(after)
		c.book.finishSync(start, nil)
	}
	c.m.syncSeconds.Observe(time.Since(start).Seconds())
	c.plans.mu.Lock()
	c.plans.targets = targets
	c.plans.mu.Unlock()
	c.log.Debug("rendered", "pools", len(targets), "duration", time.Since(start))
	return true
}

// processNext writes one pool; false once the queue is shut down.
func (c *Controller) processNext(ctx context.Context, q queue) bool {
	pool, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(pool)
	err := c.syncOne(ctx, pool)
	if errors.Is(err, errPoolWaits) {
		err = nil // queued again by the change it waits for, not retried
	}
	c.book.report(pool, err)
	switch {
	case err == nil:
		q.Forget(pool)
	case ctx.Err() != nil:
	case q.NumRequeues(pool) < maxRetries:
		c.m.retries.Inc()
		q.AddRateLimited(pool)
	default:
		q.Forget(pool)
		q.AddAfter(pool, time.Minute)
	}
	return true
}

// syncOne brings one pool to its target: degraded with the render's error,
// waiting on a guard, refused as irreconcilable, or written.
func (c *Controller) syncOne(ctx context.Context, pool string) error {
	t, ok := c.plans.get(pool)
	// The pool as this replica last wrote it, when the cache lags: a
	// pool just pointed is not checked against the config it left.
	p := c.w.last.ahead(c.src.Pool(pool))
	if !ok || p == nil || selectorKey(p) != t.selKey {
		return nil // deleted, or changed since: that change renders again
	}
	var err error
	switch w := c.gate.guard(p, t.res); {
	case w != nil:
		err = c.wait(ctx, p, t.selKey, w)
	case t.err != nil:
		c.book.setWaiting(pool, nil)
		err = c.w.degrade(ctx, pool, t.selKey, t.err)
	default:
		c.book.setWaiting(pool, nil)
		err = c.syncRendered(ctx, p, t)
	}
	if err == nil {
		c.plans.finished(pool, t.key())
	}
	return err
}

// wait records what the pool waits for, on the pool (RenderPending) and in
// /status; nothing is finished, so the pool is queued again on every change
// and written once the change it waits for comes.
func (c *Controller) wait(ctx context.Context, p *unstructured.Unstructured, selKey string, w *wait) error {
	pool := p.GetName()
	if w.Reason == waitSelectingAll {
		c.events.emit(pool, eventWarning, "SelectingAll", w.Message)
	}
	c.book.setWaiting(pool, w)
	return errWaiting(c.w.setConditions(ctx, p, pool, selKey, map[string]condition{conditionRenderPending: {status: "True", reason: w.Reason, message: w.Message}}))
}

// syncRendered writes a pool's render unless the change is irreconcilable.
func (c *Controller) syncRendered(ctx context.Context, p *unstructured.Unstructured, t target) error {
	e, err := c.gate.reconcilable(ctx, p, t.res)
	if err != nil {
		return err
	}
	if e != nil {
		return c.w.refuse(ctx, p.GetName(), t.selKey, e)
	}
	return c.w.syncPool(ctx, t.res, t.selKey)
}

// errWaiting keeps a waiting pool out of the done set without retrying it:
// a write error is retried, a wait is not.
func errWaiting(err error) error {
	if err != nil {
		return err
	}
	return errPoolWaits
}

// errPoolWaits is the outcome of a pool that waits: not an error to retry.
var errPoolWaits = errors.New("waiting")

func configuration(p *unstructured.Unstructured) string {
	n, _, _ := unstructured.NestedString(p.Object, "spec", "configuration", "name")
	return n
}

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

// selectorKey keys what a render reads of the pool: its selector and its
// OS image stream (a pool whose stream changed since its render is not
// written from it).
func selectorKey(pool *unstructured.Unstructured) string {
	sel, _, _ := unstructured.NestedFieldNoCopy(pool.Object, "spec", "machineConfigSelector")
	stream, _, _ := unstructured.NestedFieldNoCopy(pool.Object, "spec", "osImageStream")
	b, _ := json.Marshal([]any{sel, stream})
	return string(b)
}

package controller

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
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
// after every change the caches see and every Resync. Renders happen here,
// all pools at once (a pool whose content key is unchanged keeps its
// render); the writes go through the queue, Workers pools at a time.
//
// A change after a quiet spell renders at once, and its writes wait for
// the quiet time (Debounce) since the last change: one more change within
// it supersedes the render, whose writes are dropped, and the next render
// waits for the quiet time first, so a burst of changes writes its end
// state only. The render's first Debounce overlaps the wait instead of
// following it.
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
	signals := make(chan struct{}, 1)
	go c.src.Watch(ctx, signals)
	changed := make(chan struct{}, 1)
	go c.plans.changes.relay(ctx, changed, signals, c.guards.notify)
	resync := time.NewTicker(c.cfg.Resync)
	defer resync.Stop()
	var pruneTick <-chan time.Time
	if c.cfg.Prune {
		t := time.NewTicker(max(c.cfg.PruneGrace/4, 100*time.Millisecond))
		defer t.Stop()
		pruneTick = t.C
	}
	for {
		superseded := c.plan(ctx, q)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-resync.C:
		case <-pruneTick:
			if _, err := c.pruner.prune(ctx); err != nil && ctx.Err() == nil {
				c.log.Error("pruning", "err", err)
			}
			continue
		}
		if superseded && !quiet(ctx, changed, c.cfg.Debounce) {
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

// changeLog counts the changes signalled to the leader and keeps when the
// last came: a render begun after the nth is superseded by the next.
type changeLog struct {
	mu   sync.Mutex
	n    uint64
	last time.Time
}

func (l *changeLog) get() (uint64, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n, l.last
}

// relay counts each signal from the sources and passes it on to out.
func (l *changeLog) relay(ctx context.Context, out chan<- struct{}, sources, guards <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sources:
		case <-guards:
		}
		l.mu.Lock()
		l.n++
		l.last = time.Now()
		l.mu.Unlock()
		select {
		case out <- struct{}{}:
		default:
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
	changes changeLog
}

// renderPass is one render of every pool: the pools it queued as soon as
// each rendered, with the key of the target each was queued for.
type renderPass struct {
	q      queue
	before map[string]string // the pools' selector keys as the render began
	sent   map[string]string
	// gen is the count of changes as the render began. Until the quiet
	// time since the last of them has passed, renders are held, not
	// queued; a change meanwhile drops them (see lead).
	gen      uint64
	released bool
	dropped  bool
	held     map[string]target
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

// send makes t the pool's target and queues the pool.
func (p *plans) send(pass *renderPass, pool string, t target) {
	if p.targets == nil {
		p.targets = map[string]target{}
	}
	p.targets[pool] = t
	pass.sent[pool] = t.key()
	pass.q.Add(pool)
}

// release ends the pass's wait: its held renders are queued, unless a
// change came since it began, which drops them. It is called once the
// quiet time has passed, and again as the render ends.
func (p *plans) release(pass *renderPass) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pass.released || pass.dropped {
		return
	}
	if n, _ := p.changes.get(); n != pass.gen {
		pass.dropped, pass.held = true, nil
		return
	}
	pass.released = true
	for _, pool := range slices.Sorted(maps.Keys(pass.held)) {
		p.send(pass, pool, pass.held[pool])
	}
	pass.held = nil
}

// plan renders (the renderer renders again only the pools whose content key
// changed) and queues every pool not yet written for its target's key, or
// no longer pointing where it was. A pool rendered anew is queued as soon
// as its render ends and the quiet time since the last change has passed
// (see rendered): its writes go on while the others render. It reports
// whether a change came before the quiet time passed: the render is then
// dropped, nothing queued.
func (c *Controller) plan(ctx context.Context, q queue) (superseded bool) {
	if !c.src.Synced() || !c.guards.hasSynced() {
		// Nothing to compare the render with yet; each signals once synced.
		return false
	}
	gen, last := c.plans.changes.get()
	pass := &renderPass{q: q, before: c.selectors(), sent: map[string]string{}, gen: gen, held: map[string]target{}}
	quietAt := last.Add(c.cfg.Debounce)
	if wait := time.Until(quietAt); wait > 0 {
		t := time.AfterFunc(wait, func() { c.plans.release(pass) })
		defer t.Stop()
	} else {
		pass.released = true
	}
	c.plans.begin(pass)
	targets, ok := c.render(ctx, pass.before)
	sleep(ctx, time.Until(quietAt))
	c.plans.release(pass)
	c.plans.mu.Lock()
	defer c.plans.mu.Unlock()
	c.plans.pass = nil
	if !ok || pass.dropped || ctx.Err() != nil {
		return pass.dropped
	}
	c.plans.targets = targets
	for pool, t := range targets {
		if key, sent := pass.sent[pool]; sent && key == t.key() {
			continue // queued when it rendered
		}
		if c.plans.done[pool] != t.key() || !c.pointsAt(pool, t) {
			q.Add(pool)
		}
	}
	return false
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// rendered is told of each pool rendered anew during a render (from the
// rendering goroutines) and queues it with that render as its target (held
// until the quiet time has passed), unless its selector changed since the
// render began (that change renders again) or it was written for that
// render already (plan decides).
func (c *Controller) rendered(res *render.Result) {
	c.plans.mu.Lock()
	defer c.plans.mu.Unlock()
	pass := c.plans.pass
	if pass == nil || pass.dropped {
		return // a load that is not a render of the leader's, or superseded
	}
	p := c.src.Pool(res.Pool)
	if p == nil || selectorKey(p) != pass.before[res.Pool] {
		return
	}
	t := target{res: res, selKey: pass.before[res.Pool]}
	if c.plans.done[res.Pool] == t.key() {
		return
	}
	if !pass.released {
		pass.held[res.Pool] = t
		return
	}
	c.plans.send(pass, res.Pool, t)
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

// render renders every pool from the caches and returns their targets,
// given the pools' selector keys before it began; false when nothing could
// be rendered (the API server, not the objects, at fault). A pool whose
// selector changed while rendering gets no target: the change has
// signalled another render.
func (c *Controller) render(ctx context.Context, before map[string]string) (map[string]target, bool) {
	start := time.Now()
	in, err := c.src.Load(ctx)
	targets := map[string]target{}
	if err != nil {
		if ctx.Err() != nil {
			return nil, false
		}
		c.book.finishSync(start, err)
		c.log.Error("cannot render", "err", err)
		var es *render.Errors
		if !errors.As(err, &es) {
			return nil, false
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
	c.log.Debug("rendered", "pools", len(targets), "duration", time.Since(start))
	return targets, true
}

// processNext writes one pool; false once the queue is shut down.
func (c *Controller) processNext(ctx context.Context, q queue) bool {
	pool, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(pool)
	err := c.syncOne(ctx, pool)
	if c.afterSync != nil {
		c.afterSync(pool, err)
	}
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

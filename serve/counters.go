package serve

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/prometheus/client_golang/prometheus"
)

// counters memoise the request path's label lookups. Their keys are the
// already-bounded label values, so they are bounded too.
type counters struct {
	m        *metrics
	requests memo[requestKey]
	bytesOf  memo[bytesKey]
	skew     memo[skewKey]
	refusals memo[status.Cause]
}

// memo is a map of counters by key that a lookup reads without a lock: one
// atomic load and a map access, which a hit does without allocating. A new
// key copies the map; keys are bounded label values, and new ones rare.
// (A sync.Map hashed these struct keys through the runtime's generic
// interface hash: ~1.8 µs of a request's CPU for three lookups, perf.)
type memo[K comparable] struct {
	mu sync.Mutex // serialises the copies
	m  atomic.Pointer[map[K]prometheus.Counter]
}

// get is the counter cached under k, made on first use.
func (c *memo[K]) get(k K, mk func() prometheus.Counter) prometheus.Counter {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
	}
	next := make(map[K]prometheus.Counter, 1)
	if old != nil {
		next = maps.Clone(*old)
	}
	v := mk()
	next[k] = v
	c.m.Store(&next)
	return v
}

type requestKey struct {
	pool, spec string
	code       int
}

type bytesKey struct{ pool, spec string }

type skewKey struct{ pool, decision, reason string }

func (c *counters) request(pool, spec string, code int) {
	c.requests.get(requestKey{pool, spec, code}, func() prometheus.Counter {
		return c.m.requests.WithLabelValues(pool, specLabel(spec), codeLabel(code))
	}).Inc()
}

func (c *counters) bytes(pool, spec string) prometheus.Counter {
	return c.bytesOf.get(bytesKey{pool, spec}, func() prometheus.Counter {
		return c.m.servedBytes.WithLabelValues(pool, spec)
	})
}

// skewed counts a skew gate decision: pools, decisions and the gate's
// reasons are bounded.
func (c *counters) skewed(pool, decision, reason string) {
	c.skew.get(skewKey{pool, decision, reason}, func() prometheus.Counter {
		return c.m.skew.WithLabelValues(pool, decision, reason)
	}).Inc()
}

// refusal needs no cache bound: causes are the contract's constants.
func (c *counters) refusal(cause status.Cause) prometheus.Counter {
	return c.refusals.get(cause, func() prometheus.Counter { return c.m.refusals.WithLabelValues(string(cause)) })
}

// clientEntry is what the request path needs of a User-Agent: its counter
// and its bounded label.
type clientEntry struct {
	requests prometheus.Counter
	label    string
}

// clients caches by User-Agent only up to a bound (see cacheable): past
// it, a flood of distinct agents is labelled each time rather than
// remembered.
type clients struct {
	vec *prometheus.CounterVec
	m   sync.Map // User-Agent → *clientEntry
	n   atomic.Int64
}

func (c *clients) get(ua string) *clientEntry {
	if v, ok := c.m.Load(ua); ok {
		return v.(*clientEntry)
	}
	label := clientLabel(ua)
	e := &clientEntry{requests: c.vec.WithLabelValues(label), label: label}
	if cacheable(ua, &c.n) {
		if _, loaded := c.m.LoadOrStore(ua, e); !loaded {
			c.n.Add(1)
		}
	}
	return e
}

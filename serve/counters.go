package serve

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// counters memoise the request path's label lookups. Their keys are the
// already-bounded label values, so they are bounded too.
type counters struct {
	m *metrics
	c sync.Map // requestKey, bytesKey, skewKey or Cause → prometheus.Counter
}

// memo is the counter cached under k, made on first use. Generic so that
// a hit allocates nothing: the key is boxed for sync.Map on the caller's
// stack, where a key passed as an interface would escape to the heap
// (LoadOrStore keeps it) on every request.
func memo[K comparable](c *sync.Map, k K, make func() prometheus.Counter) prometheus.Counter {
	if v, ok := c.Load(k); ok {
		return v.(prometheus.Counter)
	}
	v, _ := c.LoadOrStore(k, make())
	return v.(prometheus.Counter)
}

type requestKey struct {
	pool, spec string
	code       int
}

type bytesKey struct{ pool, spec string }

type skewKey struct{ pool, decision, reason string }

func (c *counters) request(pool, spec string, code int) {
	memo(&c.c, requestKey{pool, spec, code}, func() prometheus.Counter {
		return c.m.requests.WithLabelValues(pool, specLabel(spec), codeLabel(code))
	}).Inc()
}

func (c *counters) bytes(pool, spec string) prometheus.Counter {
	return memo(&c.c, bytesKey{pool, spec}, func() prometheus.Counter {
		return c.m.servedBytes.WithLabelValues(pool, spec)
	})
}

// skewed counts a skew gate decision: pools, decisions and the gate's
// reasons are bounded.
func (c *counters) skewed(pool, decision, reason string) {
	memo(&c.c, skewKey{pool, decision, reason}, func() prometheus.Counter {
		return c.m.skew.WithLabelValues(pool, decision, reason)
	}).Inc()
}

// refusal needs no cache bound: causes are the contract's constants.
func (c *counters) refusal(cause Cause) prometheus.Counter {
	return memo(&c.c, cause, func() prometheus.Counter { return c.m.refusals.WithLabelValues(string(cause)) })
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

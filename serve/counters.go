package serve

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// counterCache memoises label lookups on the request path. Its keys are the
// already-bounded label values, so it is bounded too.
type counterCache struct{ m sync.Map }

func (c *counterCache) get(key any, make func() prometheus.Counter) prometheus.Counter {
	if v, ok := c.m.Load(key); ok {
		return v.(prometheus.Counter)
	}
	v, _ := c.m.LoadOrStore(key, make())
	return v.(prometheus.Counter)
}

type requestKey struct {
	pool, spec string
	code       int
}

type bytesKey struct{ pool, spec string }

func (s *Server) requestCounter(pool, spec string, code int) prometheus.Counter {
	return s.counters.get(requestKey{pool, spec, code}, func() prometheus.Counter {
		return s.m.requests.WithLabelValues(pool, specLabel(spec), codeLabel(code))
	})
}

func (s *Server) bytesCounter(pool, spec string) prometheus.Counter {
	return s.counters.get(bytesKey{pool, spec}, func() prometheus.Counter {
		return s.m.servedBytes.WithLabelValues(pool, spec)
	})
}

// clientEntry is what the request path needs of a User-Agent: its counter
// and its bounded label.
type clientEntry struct {
	requests prometheus.Counter
	label    string
}

// client caches by User-Agent only up to a bound: past it, a flood of
// distinct agents is labelled each time rather than remembered.
func (s *Server) client(ua string) *clientEntry {
	if v, ok := s.counters.m.Load(uaKey(ua)); ok {
		return v.(*clientEntry)
	}
	label := clientLabel(ua)
	c := &clientEntry{requests: s.m.clients.WithLabelValues(label), label: label}
	if s.nUA.Load() < acceptCacheMax {
		if _, loaded := s.counters.m.LoadOrStore(uaKey(ua), c); !loaded {
			s.nUA.Add(1)
		}
	}
	return c
}

type uaKey string

// refusalCounter needs no cache bound: causes are the contract's constants.
func (s *Server) refusalCounter(c Cause) prometheus.Counter {
	return s.counters.get(c, func() prometheus.Counter { return s.m.refusals.WithLabelValues(string(c)) })
}

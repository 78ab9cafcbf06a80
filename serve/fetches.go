package serve

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ignition-mcs/mcs/source"
)

// The fetch log is bounded by pools × fetchRenderedMax × fetchClientsMax:
// the rendered configs served longest ago are forgotten first, and client
// versions past the bound are counted as "other".
const (
	fetchRenderedMax = 8
	fetchClientsMax  = 16
)

// fetchLog records, per pool and rendered config, which clients fetched it,
// when first and last, and how often. The request path reaches its record
// through the snapshot's pool and only touches atomics.
type fetchLog struct {
	mu    sync.Mutex
	pools map[string][]*renderedFetches // most recently served first
}

type renderedFetches struct {
	rendered string
	since    time.Time    // when this server began serving it
	first    atomic.Int64 // Unix nanoseconds of the first fetch by an Ignition client; 0: none yet

	mu      sync.Mutex // serialises adding a client
	clients atomic.Pointer[[]*clientFetches]
}

type clientFetches struct {
	label string // clientLabel: "v2.27", "other", "none"
	first int64  // Unix nanoseconds
	last  atomic.Int64
	n     atomic.Uint64
}

// attachFetches links every pool of snap to the record of its rendered
// config, before snap is served, and forgets the pools it no longer has.
func (rec *recorder) attachFetches(snap *Snapshot) {
	l := &rec.fetches
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pools == nil {
		l.pools = map[string][]*renderedFetches{}
	}
	for name := range l.pools {
		if snap.pools[name] == nil {
			delete(l.pools, name)
			rec.m.firstTime.DeleteLabelValues(name)
		}
	}
	for _, name := range snap.names {
		p := snap.pools[name]
		rf := l.served(name, p.result.Name, snap.Built)
		if p.fetches.Load() != rf {
			p.fetches.Store(rf)
		}
		rec.m.firstTime.WithLabelValues(name).Set(unixSeconds(rf.first.Load()))
	}
}

// served returns the record of a pool's rendered config, moved to the
// front; the records served longest ago fall off the end.
func (l *fetchLog) served(pool, rendered string, now time.Time) *renderedFetches {
	list := l.pools[pool]
	i := slices.IndexFunc(list, func(r *renderedFetches) bool { return r.rendered == rendered })
	var rf *renderedFetches
	if i >= 0 {
		rf = list[i]
		list = slices.Delete(list, i, i+1)
	} else {
		rf = &renderedFetches{rendered: rendered, since: now}
	}
	list = slices.Insert(list, 0, rf)
	if len(list) > fetchRenderedMax {
		clear(list[fetchRenderedMax:])
		list = list[:fetchRenderedMax]
	}
	l.pools[pool] = list
	return rf
}

// recordFetch counts a config body served to a client. It allocates
// nothing once the client's version has been seen for this config.
func (rec *recorder) recordFetch(p *pool, label string, r *http.Request) {
	rf := p.fetches.Load()
	if rf == nil {
		return // a snapshot never swapped in (tests)
	}
	now := time.Now()
	if rf.record(label, now.UnixNano()) {
		rec.firstFetch(p.name, rf, r, now)
	}
}

// record counts one fetch and reports whether it is the config's first by
// an Ignition client.
func (r *renderedFetches) record(label string, now int64) bool {
	c := r.client(label, now)
	c.last.Store(now)
	c.n.Add(1)
	return strings.HasPrefix(label, "v") && r.first.Load() == 0 && r.first.CompareAndSwap(0, now)
}

func (r *renderedFetches) client(label string, now int64) *clientFetches {
	if c := findClient(r.clients.Load(), label); c != nil {
		return c
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.clients.Load()
	var list []*clientFetches
	if cur != nil {
		list = *cur
	}
	if len(list) >= fetchClientsMax-1 && label != "other" {
		label = "other"
	}
	if c := findClient(cur, label); c != nil {
		return c
	}
	c := &clientFetches{label: label, first: now}
	next := append(slices.Clip(list), c)
	r.clients.Store(&next)
	return c
}

func findClient(list *[]*clientFetches, label string) *clientFetches {
	if list == nil {
		return nil
	}
	for _, c := range *list {
		if c.label == label {
			return c
		}
	}
	return nil
}

// firstFetch tells everyone that a rendered config reached its first node,
// so "no node has fetched the new config yet" can be told from "nodes
// fetched it and failed later".
func (rec *recorder) firstFetch(pool string, rf *renderedFetches, r *http.Request, now time.Time) {
	after := now.Sub(rf.since).Round(time.Second)
	rec.log.Info("rendered config fetched for the first time", "pool", pool, "rendered", rf.rendered,
		"remote", r.RemoteAddr, "client", forLog(r.UserAgent()), "servedFor", after)
	rec.m.firsts.WithLabelValues(pool).Inc()
	if snap := rec.served(); snap != nil {
		if p := snap.pools[pool]; p != nil && p.fetches.Load() == rf {
			rec.m.firstTime.WithLabelValues(pool).Set(unixSeconds(now.UnixNano()))
		}
	}
	rec.tell(source.Notice{Kind: source.NoticeFirstFetch, Pool: pool, Rendered: rf.rendered,
		Message: rf.rendered + " first fetched by the node at " + node(r.RemoteAddr, r.UserAgent()) + ", " + after.String() + " after this server began serving it"})
}

func unixSeconds(ns int64) float64 {
	if ns == 0 {
		return 0
	}
	return float64(ns) / 1e9
}

// RenderedFetches is what was fetched of one rendered config of a pool.
type RenderedFetches struct {
	Rendered string `json:"rendered"`
	// Serving is true for the rendered config the pool serves now.
	Serving bool `json:"serving"`
	// ServedSince is when this server began serving it.
	ServedSince time.Time `json:"servedSince"`
	// FirstIgnitionFetch is when a real Ignition client first fetched it;
	// absent: no node has yet.
	FirstIgnitionFetch *time.Time      `json:"firstIgnitionFetch,omitempty"`
	First              *time.Time      `json:"first,omitempty"`
	Last               *time.Time      `json:"last,omitempty"`
	Count              uint64          `json:"count"`
	Clients            []ClientFetches `json:"clients"`
}

// ClientFetches counts the fetches by one Ignition version (major.minor;
// "other" or "none" for other clients).
type ClientFetches struct {
	Ignition string    `json:"ignition"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	Count    uint64    `json:"count"`
}

// status returns a pool's fetch records, most recently served first.
func (l *fetchLog) status(pool string, serving *renderedFetches) []RenderedFetches {
	l.mu.Lock()
	list := slices.Clone(l.pools[pool])
	l.mu.Unlock()
	out := make([]RenderedFetches, 0, len(list))
	for _, rf := range list {
		st := RenderedFetches{Rendered: rf.rendered, Serving: rf == serving, ServedSince: rf.since, Clients: []ClientFetches{}}
		if ns := rf.first.Load(); ns != 0 {
			t := time.Unix(0, ns)
			st.FirstIgnitionFetch = &t
		}
		if cs := rf.clients.Load(); cs != nil {
			for _, c := range *cs {
				cf := ClientFetches{Ignition: c.label, First: time.Unix(0, c.first), Last: time.Unix(0, c.last.Load()), Count: c.n.Load()}
				st.Clients = append(st.Clients, cf)
				st.Count += cf.Count
				if st.First == nil || cf.First.Before(*st.First) {
					st.First = &cf.First
				}
				if st.Last == nil || cf.Last.After(*st.Last) {
					st.Last = &cf.Last
				}
			}
		}
		out = append(out, st)
	}
	return out
}

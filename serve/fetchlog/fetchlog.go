// Package fetchlog records which clients fetched each pool's rendered configs, when first and last, and how often, in bounded memory.
package fetchlog

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The log is bounded by pools × RenderedMax × ClientsMax:
// the rendered configs served longest ago are forgotten first, and client
// versions past the bound are counted as "other".
const (
	RenderedMax = 8
	ClientsMax  = 16
)

// Log records, per pool and rendered config, which clients fetched it,
// when first and last, and how often. The request path reaches its record
// through the snapshot's pool and only touches atomics.
type Log struct {
	mu    sync.Mutex
	pools map[string][]*Rendered // most recently served first
}

// Rendered is the record of one rendered config of a pool.
type Rendered struct {
	rendered string
	since    time.Time    // when this server began serving it
	first    atomic.Int64 // Unix nanoseconds of the first fetch by an Ignition client; 0: none yet

	mu      sync.Mutex // serialises adding a client
	clients atomic.Pointer[[]*clientCount]
}

type clientCount struct {
	label string // clientLabel: "v2.27", "other", "none"
	first int64  // Unix nanoseconds
	last  atomic.Int64
	n     atomic.Uint64
}

// Served returns the record of a pool's rendered config, moved to the
// front; the records served longest ago fall off the end.
func (l *Log) Served(pool, rendered string, now time.Time) *Rendered {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pools == nil {
		l.pools = map[string][]*Rendered{}
	}
	list := l.pools[pool]
	i := slices.IndexFunc(list, func(r *Rendered) bool { return r.rendered == rendered })
	var rf *Rendered
	if i >= 0 {
		rf = list[i]
		list = slices.Delete(list, i, i+1)
	} else {
		rf = &Rendered{rendered: rendered, since: now}
	}
	list = slices.Insert(list, 0, rf)
	if len(list) > RenderedMax {
		clear(list[RenderedMax:])
		list = list[:RenderedMax]
	}
	l.pools[pool] = list
	return rf
}

// Forget forgets the pools keep reports false for, and returns them.
func (l *Log) Forget(keep func(pool string) bool) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var gone []string
	for name := range l.pools {
		if !keep(name) {
			delete(l.pools, name)
			gone = append(gone, name)
		}
	}
	return gone
}

// Name is the rendered config's name.
func (r *Rendered) Name() string { return r.rendered }

// Since is when this server began serving the rendered config.
func (r *Rendered) Since() time.Time { return r.since }

// FirstFetch is when an Ignition client first fetched the rendered
// config, in Unix nanoseconds; 0: none has yet.
func (r *Rendered) FirstFetch() int64 { return r.first.Load() }

// Record counts one fetch and reports whether it is the config's first by
// an Ignition client.
func (r *Rendered) Record(label string, now int64) bool {
	c := r.client(label, now)
	c.last.Store(now)
	c.n.Add(1)
	return strings.HasPrefix(label, "v") && r.first.Load() == 0 && r.first.CompareAndSwap(0, now)
}

func (r *Rendered) client(label string, now int64) *clientCount {
	if c := findClient(r.clients.Load(), label); c != nil {
		return c
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.clients.Load()
	var list []*clientCount
	if cur != nil {
		list = *cur
	}
	if len(list) >= ClientsMax-1 && label != "other" {
		label = "other"
	}
	if c := findClient(cur, label); c != nil {
		return c
	}
	c := &clientCount{label: label, first: now}
	next := append(slices.Clip(list), c)
	r.clients.Store(&next)
	return c
}

func findClient(list *[]*clientCount, label string) *clientCount {
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

// RenderedStatus is what was fetched of one rendered config of a pool.
type RenderedStatus struct {
	Rendered string `json:"rendered"`
	// Serving is true for the rendered config the pool serves now.
	Serving bool `json:"serving"`
	// ServedSince is when this server began serving it.
	ServedSince time.Time `json:"servedSince"`
	// FirstIgnitionFetch is when a real Ignition client first fetched it;
	// absent: no node has yet.
	FirstIgnitionFetch *time.Time     `json:"firstIgnitionFetch,omitempty"`
	First              *time.Time     `json:"first,omitempty"`
	Last               *time.Time     `json:"last,omitempty"`
	Count              uint64         `json:"count"`
	Clients            []ClientStatus `json:"clients"`
}

// ClientStatus counts the fetches by one Ignition version (major.minor;
// "other" or "none" for other clients).
type ClientStatus struct {
	Ignition string    `json:"ignition"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	Count    uint64    `json:"count"`
}

// Status returns a pool's fetch records, most recently served first.
func (l *Log) Status(pool string, serving *Rendered) []RenderedStatus {
	l.mu.Lock()
	list := slices.Clone(l.pools[pool])
	l.mu.Unlock()
	out := make([]RenderedStatus, 0, len(list))
	for _, rf := range list {
		st := RenderedStatus{Rendered: rf.rendered, Serving: rf == serving, ServedSince: rf.since, Clients: []ClientStatus{}}
		if ns := rf.first.Load(); ns != 0 {
			t := time.Unix(0, ns)
			st.FirstIgnitionFetch = &t
		}
		if cs := rf.clients.Load(); cs != nil {
			for _, c := range *cs {
				cf := ClientStatus{Ignition: c.label, First: time.Unix(0, c.first), Last: time.Unix(0, c.last.Load()), Count: c.n.Load()}
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

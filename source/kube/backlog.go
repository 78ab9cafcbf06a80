package kube

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ignition-mcs/mcs/source"
)

// DefaultBacklogList is how many changed MachineConfigs waiting to be read
// whole make the source read them with one LIST rather than a GET each.
const DefaultBacklogList = 100

// roleLabel is the label of the MachineConfigs pools select by role, the
// ones a bulk read lists.
const roleLabel = "machineconfiguration.openshift.io/role"

// backlog counts the changed objects a watch has seen and not yet read
// whole, across the watches the informer starts, for /status and metrics.
type backlog struct {
	mu    sync.Mutex
	n     int
	since time.Time // when it last became non-zero
	now   func() time.Time
	gauge func(float64)
}

// set records the backlog now.
func (b *backlog) set(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case n > 0 && b.n == 0:
		b.since = b.now()
	case n == 0:
		b.since = time.Time{}
	}
	b.n = n
	if b.gauge != nil {
		b.gauge(float64(n))
	}
}

// Backlog is how many changed MachineConfigs the source has seen and not
// read yet (self mode), and since when: a stream of changes faster than
// the client's rate grows it, until it is read in bulk. It is the
// Source's (source.Lagging).
func (b *backlog) Backlog() source.Backlog {
	b.mu.Lock()
	defer b.mu.Unlock()
	return source.Backlog{Objects: b.n, Since: b.since}
}

// pending is a watch's events not passed on yet, in the order they came.
// Each object has only its newest event in it: an older one is dropped
// when a newer comes, its object having changed since, so the queue's
// resourceVersions rise and an informer resuming from any event passed on
// misses none behind it.
type pending struct {
	mu     sync.Mutex
	events []watch.Event
	wake   chan struct{} // capacity 1: events were added
	done   bool          // the watch ended: the reader stopped
}

func (p *pending) add(ev watch.Event) {
	p.mu.Lock()
	if name := eventName(ev); name != "" {
		for i, old := range p.events {
			if eventName(old) == name {
				p.events = append(p.events[:i], p.events[i+1:]...)
				break
			}
		}
	}
	p.events = append(p.events, ev)
	p.mu.Unlock()
	p.poke()
}

func (p *pending) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// take removes and returns every pending event, or only the first when
// fewer than bulk need reading whole; ended says the watch ended and none
// are left.
func (p *pending) take(bulk int, needs func(watch.Event) bool) (evs []watch.Event, ended bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.events) == 0 {
		return nil, p.done
	}
	n := 0
	for _, ev := range p.events {
		if needs(ev) {
			n++
		}
	}
	if n >= bulk {
		evs, p.events = p.events, nil
		return evs, false
	}
	evs = []watch.Event{p.events[0]}
	p.events = p.events[1:]
	return evs, false
}

func (p *pending) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.events)
}

// eventName is the name of the object of an object's event, "" for others.
func eventName(ev watch.Event) string {
	if u, ok := ev.Object.(*unstructured.Unstructured); ok {
		return u.GetName()
	}
	return ""
}

// readAll reads whole, with one LIST of the MachineConfigs pools select by
// role, the objects of events that need it, and returns the events to pass
// on, in order: an object listed at the event's resourceVersion is taken
// from the list; one changed or gone since (listed at another version, or,
// role-labelled, not listed) is dropped, its newer event to come; any other
// is read with a GET (whole).
func (l *selfMachineConfigs) readAll(ctx context.Context, evs []watch.Event) []watch.Event {
	list, err := l.full.List(ctx, metav1.ListOptions{LabelSelector: roleLabel})
	if err != nil {
		return []watch.Event{errorEvent(err)}
	}
	listed := make(map[string]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		listed[list.Items[i].GetName()] = &list.Items[i]
	}
	out := evs[:0]
	for _, ev := range evs {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || !needsWhole(ev) {
			out = append(out, ev)
			continue
		}
		got, in := listed[u.GetName()]
		_, labelled := u.GetLabels()[roleLabel]
		switch {
		case in && got.GetResourceVersion() == u.GetResourceVersion():
			ev.Object = got
		case in || labelled:
			continue
		default:
			var keep bool
			if ev, keep = l.readOne(ctx, ev); !keep {
				continue
			}
		}
		out = append(out, ev)
	}
	return out
}

// readOne reads the object of ev whole with a GET; false drops the event:
// the object has changed or gone since, and that event follows.
func (l *selfMachineConfigs) readOne(ctx context.Context, ev watch.Event) (watch.Event, bool) {
	u := ev.Object.(*unstructured.Unstructured)
	got, err := l.full.Get(ctx, u.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ev, false
	case err != nil:
		return errorEvent(err), true
	case got.GetResourceVersion() != u.GetResourceVersion():
		return ev, false
	}
	ev.Object = got
	return ev, true
}

// needsWhole says whether an event's object is read whole before it is
// passed on: an input MachineConfig added or changed.
func needsWhole(ev watch.Event) bool {
	u, ok := ev.Object.(*unstructured.Unstructured)
	return ok && (ev.Type == watch.Added || ev.Type == watch.Modified) && !isRendered(u)
}

package kube

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// selfMachineConfigs lists MachineConfigs whole, then watches their
// metadata only. In self mode a rendered config is an output whose spec no
// render reads (isRendered, stripRenderedSpec), and a worker edit creates
// one per pool, each the size of the pool's config: watched whole, the API
// server would encode each for this watch and this process decode it, only
// to drop the spec. Any other MachineConfig's change is read whole: with a
// GET, or, once bulk or more wait (a burst of changes, the client's rate
// limit), all with one LIST. One that has changed again since its event
// waits for the event of that change, so the cache never holds an object
// at a resourceVersion its watch has not reached (a watch resumed from
// there misses nothing). The changes waiting are the backlog, shown.
type selfMachineConfigs struct {
	full    dynamic.ResourceInterface
	meta    metadata.ResourceInterface
	bulk    int
	backlog *backlog
}

func (l *selfMachineConfigs) listWatch() cache.ListerWatcher {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.full.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := l.meta.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			return l.newWholeWatch(ctx, w), nil
		},
	}
	// The list is a List, not a watch streaming it (WatchListClient),
	// whose events would be metadata only.
	return cache.ToListWatcherWithWatchListSemantics(lw, listOnly{})
}

// listOnly tells the reflector the watch cannot stream the initial list.
type listOnly struct{}

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// metadataEvent turns a metadata event into one of the object the
// informer caches, without its spec: a rendered config's as it is, any
// other's to be read whole (see needsWhole).
func metadataEvent(ev watch.Event) watch.Event {
	pm, ok := ev.Object.(*metav1.PartialObjectMetadata)
	if !ok {
		return ev // an error's Status
	}
	u, err := metadataObject(pm)
	if err != nil {
		return errorEvent(err)
	}
	ev.Object = u
	return ev
}

// wholeWatch passes a metadata watch's events on with their objects read
// whole. A reader queues the events as they come (pending), so the backlog
// is counted rather than left in the connection; a worker reads the objects
// and passes the events on in order. It ends when stopped even with an
// event in hand (watch.Filter's goroutine would wait for a reader forever),
// and cancels a read under way.
type wholeWatch struct {
	in     watch.Interface
	out    chan watch.Event
	cancel context.CancelFunc
}

func (l *selfMachineConfigs) newWholeWatch(ctx context.Context, in watch.Interface) *wholeWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &wholeWatch{in: in, out: make(chan watch.Event), cancel: cancel}
	p := &pending{wake: make(chan struct{}, 1)}
	go func() {
		defer func() {
			p.mu.Lock()
			p.done = true
			p.mu.Unlock()
			p.poke()
		}()
		for ev := range in.ResultChan() {
			p.add(metadataEvent(ev))
			l.backlog.set(p.len())
		}
	}()
	go func() {
		defer close(w.out)
		defer in.Stop()
		defer l.backlog.set(0)
		l.pass(ctx, p, w.out)
	}()
	return w
}

// pass reads and passes on the pending events until the watch ends.
func (l *selfMachineConfigs) pass(ctx context.Context, p *pending, out chan<- watch.Event) {
	bulk := l.bulk
	if bulk <= 0 {
		bulk = DefaultBacklogList
	}
	for {
		evs, ended := p.take(bulk, needsWhole)
		switch {
		case ended:
			return
		case evs == nil:
			select {
			case <-p.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		l.backlog.set(p.len() + len(evs))
		if len(evs) > 1 {
			evs = l.readAll(ctx, evs)
		} else if needsWhole(evs[0]) {
			ev, keep := l.readOne(ctx, evs[0])
			evs = evs[:0]
			if keep {
				evs = append(evs, ev)
			}
		}
		for _, ev := range evs {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
		l.backlog.set(p.len())
	}
}

func (w *wholeWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop ends the watch; its events stop and the channel closes.
func (w *wholeWatch) Stop() {
	w.cancel()
	w.in.Stop()
}

// metadataObject is a MachineConfig with pm's metadata and no spec.
func metadataObject(pm *metav1.PartialObjectMetadata) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&pm.ObjectMeta)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": m}}
	u.SetGroupVersionKind(MachineConfigs.GroupVersion().WithKind("MachineConfig"))
	return u, nil
}

// errorEvent ends the watch with err; the informer lists again.
func errorEvent(err error) watch.Event {
	st := apierrors.NewInternalError(err).Status()
	if se, ok := err.(apierrors.APIStatus); ok {
		st = se.Status()
	}
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	return watch.Event{Type: watch.Error, Object: &st}
}

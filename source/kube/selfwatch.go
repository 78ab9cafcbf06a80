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
// to drop the spec. Any other MachineConfig's change is read whole with a
// GET; one that has changed again since its event waits for the event of
// that change, so the cache never holds an object at a resourceVersion its
// watch has not reached (a watch resumed from there misses nothing).
type selfMachineConfigs struct {
	full dynamic.ResourceInterface
	meta metadata.ResourceInterface
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
			return newWholeWatch(ctx, w, l.whole), nil
		},
	}
	// The list is a List, not a watch streaming it (WatchListClient),
	// whose events would be metadata only.
	return cache.ToListWatcherWithWatchListSemantics(lw, listOnly{})
}

// listOnly tells the reflector the watch cannot stream the initial list.
type listOnly struct{}

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// whole turns a metadata event into the event of the object the informer
// caches: a rendered config's metadata as an object without a spec, any
// other MachineConfig read whole. false drops the event: the object has
// changed or gone since, and that event follows.
func (l *selfMachineConfigs) whole(ctx context.Context, ev watch.Event) (watch.Event, bool) {
	pm, ok := ev.Object.(*metav1.PartialObjectMetadata)
	if !ok {
		return ev, true // an error's Status
	}
	u, err := metadataObject(pm)
	if err != nil {
		return errorEvent(err), true
	}
	ev.Object = u
	if (ev.Type != watch.Added && ev.Type != watch.Modified) || isRendered(u) {
		return ev, true
	}
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

// wholeWatch passes a watch's events on through whole, as watch.Filter
// does, but ends when stopped even with an event in hand (watch.Filter's
// goroutine would wait for a reader forever), and cancels a GET under way.
type wholeWatch struct {
	in     watch.Interface
	out    chan watch.Event
	cancel context.CancelFunc
}

func newWholeWatch(ctx context.Context, in watch.Interface, whole func(context.Context, watch.Event) (watch.Event, bool)) *wholeWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &wholeWatch{in: in, out: make(chan watch.Event), cancel: cancel}
	go func() {
		defer close(w.out)
		defer in.Stop()
		for ev := range in.ResultChan() {
			ev, keep := whole(ctx, ev)
			if !keep {
				continue
			}
			select {
			case w.out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return w
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

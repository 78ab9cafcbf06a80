package pki

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PoolToken is a token the server accepts for one pool.
type PoolToken struct {
	Pool, Token string
}

// TokenWatch follows the pool token Secrets: a rotated token is accepted
// with its predecessor until the grace ends, a deleted Secret's token stops
// as soon as the watch reports it.
type TokenWatch struct {
	log     *slog.Logger
	store   cache.Store
	current atomic.Pointer[[]PoolToken]
	mu      sync.Mutex
	timer   *time.Timer
	gen     atomic.Uint64
}

// WatchTokens starts following the pool token Secrets until ctx ends; it
// returns once the first list has arrived.
func WatchTokens(ctx context.Context, c kubernetes.Interface, log *slog.Logger) (*TokenWatch, error) {
	f := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(mcoNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = tokenLabel }))
	inf := f.Core().V1().Secrets().Informer()
	w := &TokenWatch{log: log, store: inf.GetStore()}
	empty := []PoolToken{}
	w.current.Store(&empty)
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { w.rebuild() }, UpdateFunc: func(any, any) { w.rebuild() }, DeleteFunc: func(any) { w.rebuild() }})
	if err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("pool token secrets in %s: the first list did not arrive", mcoNamespace)
	}
	w.rebuild()
	return w, nil
}

// Tokens are the pool tokens accepted now; the slice is the same until a
// Secret changes or a grace ends (Generation says which).
func (w *TokenWatch) Tokens() []PoolToken { return *w.current.Load() }

// Generation changes whenever Tokens does.
func (w *TokenWatch) Generation() uint64 { return w.gen.Load() }

func (w *TokenWatch) rebuild() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	var out []PoolToken
	var next time.Time
	for _, o := range w.store.List() {
		s, ok := o.(*corev1.Secret)
		if !ok {
			continue
		}
		t := tokenFromSecret(s)
		for _, tok := range t.accepted(now) {
			out = append(out, PoolToken{Pool: s.Labels[tokenLabel], Token: tok})
		}
		if t.Previous != "" && now.Before(t.PreviousUntil) && (next.IsZero() || t.PreviousUntil.Before(next)) {
			next = t.PreviousUntil
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	w.current.Store(&out)
	w.gen.Add(1)
	if w.timer != nil {
		w.timer.Stop()
	}
	if !next.IsZero() {
		// The grace ends without an event: rebuild then.
		w.timer = time.AfterFunc(time.Until(next)+time.Millisecond, w.rebuild)
	}
	w.log.Debug("pool tokens", "accepted", len(out))
}

package pki

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/internal/prom"
)

// Config configures a Manager.
type Config struct {
	Clients   Clients
	Lifetimes Lifetimes
	// Tokens, when Rotation is set, keeps a token Secret per pool, carried
	// by the generated pointer configs.
	Tokens TokenPolicy
	// Resync is how often a pass runs without a change seen (expiries are
	// reached by time alone); pool changes start one at once.
	Resync time.Duration
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Registry, when set, receives the metrics of Run's passes.
	Registry prometheus.Registerer
}

// Manager keeps the CA, bundle, serving certificate, user-data pointer
// configs and pool tokens in step. Every write is an optimistic update
// (a conflict is retried at the next pass), so replicas need no lease.
type Manager struct {
	cfg  Config
	log  *slog.Logger
	kick chan struct{}
	// worksUntil is, per user-data Secret, when a node booting with its
	// pointer config stops reaching the server (0: it does not now).
	worksUntil *prometheus.GaugeVec
	// after paces finish's passes; tests replace it.
	after func(time.Duration) <-chan time.Time
}

// New checks cfg and returns a Manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Clients.Kube == nil || cfg.Clients.Dynamic == nil {
		return nil, errors.New("pki: no API clients")
	}
	if err := cfg.Lifetimes.validate(); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if cfg.Tokens.Rotation > 0 && cfg.Tokens.Grace <= 0 {
		return nil, errors.New("pki: a token rotation needs a grace period")
	}
	if cfg.Resync <= 0 {
		cfg.Resync = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	f, registered := prom.With(cfg.Registry)
	m := &Manager{cfg: cfg, log: cfg.Logger.With("component", "pki"), kick: make(chan struct{}, 1), after: time.After,
		worksUntil: f.NewGaugeVec(prometheus.GaugeOpts{Name: "mcs_pki_pointer_config_works_until_timestamp_seconds",
			Help: "Per user-data Secret, when a node booting with its pointer config stops reaching the server (its CAs expire, or what they verify is replaced); 0 when it does not now."}, []string{"secret"})}
	if err := registered(); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return m, nil
}

// observe sets the metrics from a pass's report: a Secret gone is dropped.
func (m *Manager) observe(r *Report) {
	m.worksUntil.Reset()
	for _, p := range r.Pointers {
		v := 0.0
		if !p.WorksUntil.IsZero() {
			v = float64(p.WorksUntil.Unix())
		}
		m.worksUntil.WithLabelValues(p.Secret).Set(v)
	}
}

// run passes until ctx ends: at start, every Resync, when a pool is added
// or deleted (its token and pointer config follow at once) and when the
// Infrastructure changes (the serving certificate's names).
func (m *Manager) run(ctx context.Context) error {
	f := dynamicinformer.NewDynamicSharedInformerFactory(m.cfg.Clients.Dynamic, 0)
	for _, gvr := range []schema.GroupVersionResource{poolsGVR(), Infrastructures} {
		// A pool's status changes all the time; the Infrastructure's only
		// when its hosts (the certificate's names) may have.
		onUpdate := func(any, any) {}
		if gvr == Infrastructures {
			onUpdate = func(any, any) { m.poke() }
		}
		onDelete := func(any) { m.poke() }
		if gvr != Infrastructures {
			onDelete = func(o any) { m.revoke(ctx, o); m.poke() }
		}
		_, _ = f.ForResource(gvr).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { m.poke() },
			UpdateFunc: onUpdate,
			DeleteFunc: onDelete,
		})
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	t := time.NewTicker(m.cfg.Resync)
	defer t.Stop()
	for {
		r, err := m.Sync(ctx, false, false)
		if err != nil && ctx.Err() == nil {
			m.log.Error("pki pass failed; retried at the next", "err", err)
		}
		if r != nil {
			m.observe(r)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-m.kick:
		}
	}
}

// revoke deletes a deleted pool's token Secret at once, before the pass
// the deletion starts (which reads everything first).
func (m *Manager) revoke(ctx context.Context, o any) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	pool, ok := o.(interface{ GetName() string })
	if !ok || m.cfg.Tokens.Rotation <= 0 {
		return
	}
	err := m.cfg.Clients.Kube.CoreV1().Secrets(mcoNamespace).Delete(ctx, tokenSecretName(pool.GetName()), metav1.DeleteOptions{})
	switch {
	case err == nil:
		m.log.Info("pki", "change", "delete secret "+mcoNamespace+"/"+tokenSecretName(pool.GetName())+": its pool is gone: the token is revoked")
	case !apierrors.IsNotFound(err):
		m.log.Error("revoking a deleted pool's token; retried at the next pass", "pool", pool.GetName(), "err", err)
	}
}

func (m *Manager) poke() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Sync runs one pass: force replaces the CA now; dryRun writes nothing
// (the API server checks each write with dryRun=All). The Report says
// what is there afterwards and what changed. A forced pass whose new CA is
// written is finished even when a later write meets another writer's
// change (see finish); one that stops before says whether any write to
// the CA Secret landed.
func (m *Manager) Sync(ctx context.Context, force, dryRun bool) (*Report, error) {
	r, ca, err := m.pass(ctx, force, dryRun)
	var ce *conflictError
	switch {
	case !force || dryRun || err == nil:
		return r, err
	case ca == caTouched:
		return r, fmt.Errorf("the CA Secret was deleted to change its type, but this rotation's new CA was not created in its place: %w", err)
	case ca == caUntouched && errors.As(err, &ce):
		return r, fmt.Errorf("nothing written, the CA in force is unchanged: %w", err)
	case ca == caUntouched:
		return r, err
	}
	return m.finish(ctx, r, err)
}

// pass reads, plans and writes once; ca says how far its writes to the
// CA Secret got.
func (m *Manager) pass(ctx context.Context, force, dryRun bool) (r *Report, ca caWrite, err error) {
	now := m.cfg.Now()
	cl, err := read(ctx, m.cfg.Clients)
	if err != nil {
		return nil, caUntouched, err
	}
	d, err := plan(now, cl.cur, cl.hosts, m.cfg.Lifetimes, force)
	if err != nil {
		return nil, caUntouched, err
	}
	w := &writer{c: m.cfg.Clients, dryRun: dryRun}
	err = w.applyPKI(ctx, cl, d)
	var toks map[string]poolToken
	if err == nil {
		toks, err = m.syncTokens(ctx, w, cl, now)
	}
	var left map[string]string
	if err == nil {
		left, err = m.syncPointers(ctx, w, cl, d, toks)
	}
	for _, c := range w.changes {
		m.log.Info("pki", "change", c, "dryRun", dryRun)
	}
	if dryRun {
		// What is there, not what would be: the changes say that.
		d, toks = asIs(cl), currentTokens(cl)
	}
	r = report(now, cl, d, toks, left, m.cfg.Lifetimes, m.cfg.Tokens)
	r.Changes = w.changes
	return r, w.ca, err
}

// syncTokens rotates each pool's token, creates the missing ones, and
// deletes those of pools that are gone; it returns the tokens in force.
func (m *Manager) syncTokens(ctx context.Context, w *writer, cl *cluster, now time.Time) (map[string]poolToken, error) {
	if m.cfg.Tokens.Rotation <= 0 {
		return nil, nil
	}
	out := map[string]poolToken{}
	for pool, s := range cl.tokens {
		if _, ok := cl.pools[pool]; !ok {
			if err := w.deleteSecret(ctx, s, "its pool is gone: the token is revoked"); err != nil {
				return nil, err
			}
		}
	}
	for _, pool := range sortedKeys(cl.pools) {
		old := cl.tokens[pool]
		cur := tokenFromSecret(old)
		next, changed := rotateToken(cur, now, m.cfg.Tokens)
		out[pool] = next
		if !changed {
			continue
		}
		why := "first token"
		if cur.Token != "" {
			why = "rotated; the previous token works until " + next.PreviousUntil.UTC().Format(time.RFC3339)
		}
		if cur.Token == next.Token {
			why = "the previous token's grace ended"
		}
		if err := w.putSecret(ctx, old, tokenSecret(pool, cl.pools[pool], next), why); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func asIs(cl *cluster) desired {
	c := cl.cur
	d := desired{signer: c.signer, cross: c.cross, bundle: c.bundle, serving: c.serving}
	if c.serving != nil {
		d.chain = chainFor(c.serving.cert, c.cross)
	}
	return d
}

func currentTokens(cl *cluster) map[string]poolToken {
	out := map[string]poolToken{}
	for pool, s := range cl.tokens {
		out[pool] = tokenFromSecret(s)
	}
	return out
}

func tokenFromSecret(s *corev1.Secret) poolToken {
	if s == nil {
		return poolToken{}
	}
	t := poolToken{Token: string(s.Data[tokenKey]), Previous: string(s.Data[previousKey])}
	t.RotatedAt, _ = time.Parse(time.RFC3339Nano, s.Annotations[rotatedAnnotation])
	t.PreviousUntil, _ = time.Parse(time.RFC3339Nano, s.Annotations[previousAnnotation])
	return t
}

func tokenSecret(pool, uid string, t poolToken) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: tokenSecretName(pool), Namespace: mcoNamespace,
			Labels:          map[string]string{tokenLabel: pool},
			Annotations:     map[string]string{rotatedAnnotation: t.RotatedAt.UTC().Format(time.RFC3339Nano)},
			OwnerReferences: ownerRef(pool, uid)},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{tokenKey: []byte(t.Token)},
	}
	if t.Previous != "" {
		s.Data[previousKey] = []byte(t.Previous)
		s.Annotations[previousAnnotation] = t.PreviousUntil.UTC().Format(time.RFC3339Nano)
	} else {
		s.Annotations[previousAnnotation] = ""
	}
	return s
}

// syncPointers rewrites the admins' user-data Secrets with the bundle by
// upstream's rules and writes each pool's <pool>-user-data-managed pointer
// config; it returns why each Secret it left alone was left alone.
func (m *Manager) syncPointers(ctx context.Context, w *writer, cl *cluster, d desired, toks map[string]poolToken) (map[string]string, error) {
	bundle := encodeCerts(d.bundle...)
	left := map[string]string{}
	ceilings := map[string]string{}
	for i := range cl.userData {
		s := &cl.userData[i]
		if p, err := readPointer(s.Data[userDataKey]); err == nil && s.Name == p.Pool+"-user-data" {
			ceilings[p.Pool] = p.Version
		}
		out, err := rewriteUserData(userDataSecret{Name: s.Name, Labels: s.Labels, Data: s.Data}, bundle)
		var la *errLeftAlone
		switch {
		case errors.As(err, &la):
			left[s.Name] = la.why
			continue
		case err != nil:
			return left, err
		case out == nil:
			continue
		}
		next := s.DeepCopy()
		next.Data[userDataKey] = out
		if err := w.putSecret(ctx, s, next, "its pointer config trusts the new bundle"); err != nil {
			return left, err
		}
	}
	for _, pool := range sortedKeys(cl.pools) {
		if err := m.putManaged(ctx, w, cl, pool, bundle, toks[pool].Token, ceilings[pool], left); err != nil {
			return left, err
		}
	}
	return left, nil
}

func (m *Manager) putManaged(ctx context.Context, w *writer, cl *cluster, pool string, bundle []byte, token, ceiling string, notes map[string]string) error {
	p, err := pointerConfig(cl.ignitionURL, pool, bundle, token, ceiling)
	name := pool + "-user-data-managed"
	if err != nil {
		notes[name] = err.Error()
		return nil
	}
	if p.Note != "" {
		notes[name] = p.Note
	}
	var old *corev1.Secret
	for i := range cl.userData {
		if cl.userData[i].Name == name {
			old = &cl.userData[i]
		}
	}
	if old != nil && string(old.Data[userDataKey]) == string(p.Config) {
		return nil
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: mapiNamespace,
			Labels: map[string]string{managedLabel: ""}, OwnerReferences: ownerRef(pool, cl.pools[pool])},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"disableTemplating": []byte("true\n"), userDataKey: p.Config},
	}
	return w.putSecret(ctx, old, s, fmt.Sprintf("pointer config of pool %s at spec %s", pool, p.Version))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

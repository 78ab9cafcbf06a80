package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/internal/text"
	"github.com/ignition-mcs/mcs/render"
)

// syncPool makes sure the pool's rendered MachineConfig exists with this
// content, points the pool at it, and clears RenderDegraded and
// RenderPending.
func (w *writer) syncPool(ctx context.Context, res *render.Result, selKey string) error {
	pool := w.src.Pool(res.Pool)
	if pool == nil {
		return nil // deleted since
	}
	w.book.setRendered(res)
	w.osImageURL(res)
	rv, err := w.ensureRendered(ctx, res, pool)
	if err != nil {
		var ce *contentError
		if errors.As(err, &ce) {
			return w.degrade(ctx, res.Pool, selKey, err)
		}
		return err
	}
	// The conditions are written over the pool the first write returned,
	// so the second does not conflict with the first.
	latest, err := w.pointPool(ctx, res.Pool, selKey, res.Name, sourceRefs(res.MachineConfigs))
	if err != nil || latest == nil {
		return err
	}
	if w.pointed != nil {
		w.pointed(res.Pool, res, rv)
	}
	return w.setConditions(ctx, latest, res.Pool, selKey, map[string]condition{
		conditionRenderDegraded: {status: "False"}, conditionRenderPending: {status: "False"}})
}

// sourceRefs are the pool's spec.configuration.source as OpenShift writes
// it: one reference per MachineConfig, sorted by name.
func sourceRefs(names []string) []any {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	out := make([]any, len(sorted))
	for i, n := range sorted {
		out[i] = map[string]any{"apiVersion": render.APIVersion, "kind": render.KindMachineConfig, "name": n}
	}
	return out
}

// pointPool sets the pool's spec.configuration as OpenShift's render
// controller does, unless it already says so. The config it moved off is
// remembered, so pruning gives nodes time to stop being pointed at it.
func (w *writer) pointPool(ctx context.Context, pool, selKey, name string, sources []any) (*unstructured.Unstructured, error) {
	var was string
	got, err := w.patchPool(ctx, nil, pool, selKey, "", func(p *unstructured.Unstructured) map[string]any {
		was = configuration(p)
		curSrc, _, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", "configuration", "source")
		if was == name && sameJSON(curSrc, sources) {
			return nil
		}
		return map[string]any{"spec": map[string]any{"configuration": map[string]any{"name": name, "source": sources}}}
	}, "pointed pool at "+name)
	if was != name {
		// Once the write lands (or may have), a node controller may still
		// act on the pool as it read it before.
		w.left.moving(was)
	}
	return got, err
}

// leftConfigs remembers when pools moved off rendered configs (prune's
// grace).
type leftConfigs struct {
	mu   sync.Mutex
	when map[string]time.Time
}

// moving records that a pool moves off a rendered config now.
func (l *leftConfigs) moving(name string) {
	if name == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.when == nil {
		l.when = map[string]time.Time{}
	}
	l.when[name] = time.Now()
}

// at says when this replica last moved a pool off the config (zero if it
// never did).
func (l *leftConfigs) at(name string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.when[name]
}

// degrade sets RenderDegraded with the render's error; the pool keeps the
// rendered config it names.
func (w *writer) degrade(ctx context.Context, pool, selKey string, rerr error) error {
	reason := "RenderFailed"
	if errors.Is(rerr, render.ErrSpecCeiling) {
		reason = "SpecCeilingExceeded"
	}
	return w.setDegraded(ctx, pool, selKey, reason, rerr)
}

// refuse sets RenderDegraded for a change the nodes cannot apply in place,
// with upstream's message.
func (w *writer) refuse(ctx context.Context, pool, selKey string, e *irreconcilable) error {
	return w.setDegraded(ctx, pool, selKey, "IrreconcilableChange", fmt.Errorf("could not generate rendered MachineConfig: %w", e))
}

func (w *writer) setDegraded(ctx context.Context, pool, selKey, reason string, rerr error) error {
	msg := fmt.Sprintf("Failed to render configuration for pool %s: %v", pool, rerr)
	w.book.setDegraded(pool, msg)
	w.log.Warn("pool not rendered; it keeps its rendered config", "pool", pool, "reason", reason, "err", rerr)
	return w.setConditions(ctx, nil, pool, selKey, map[string]condition{
		conditionRenderDegraded: {status: "True", reason: reason, message: text.Truncate(msg, maxConditionMessage, "… (truncated; see the controller's /status)")},
		conditionRenderPending:  {status: "False"}})
}

// maxConditionMessage bounds a condition's message: a render can fail on
// hundreds of fields, and the pool object must stay small.
const maxConditionMessage = 16 << 10

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var u, v any
	if json.Unmarshal(x, &u) != nil || json.Unmarshal(y, &v) != nil {
		return false
	}
	return reflect.DeepEqual(u, v)
}

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// fieldManager names the controller's writes in managedFields.
const fieldManager = "mcs-controller"

// conditionRenderDegraded is the pool condition a failed render sets.
const conditionRenderDegraded = "RenderDegraded"

// maxConflictRetries bounds the re-reads after a conflict; the next change
// or resync tries again.
const maxConflictRetries = 8

// contentError is a rendered MachineConfig that exists under the name of a
// render with other content. Names are content-addressed, so it is never
// rewritten: the pool keeps what it has and is degraded until someone looks.
type contentError struct {
	Name string
	Pool string
}

func (e *contentError) Error() string {
	return fmt.Sprintf("%s: MachineConfig/%s: $.spec: a rendered MachineConfig of that name exists with other content; names are content-addressed, so it is not rewritten (delete it to have it written again)", kube.Origin, e.Name)
}

// renderedObject is the rendered MachineConfig to store: the renderer's
// object, owned by the pool as OpenShift's render controller owns it.
func renderedObject(res *render.Result, pool *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	js, err := json.Marshal(res.MachineConfig)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", res.Name, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return nil, fmt.Errorf("encoding %s: %w", res.Name, err)
	}
	yes := true
	u.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: render.APIVersion, Kind: render.KindMachineConfigPool,
		Name: pool.GetName(), UID: pool.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes,
	}})
	return u, nil
}

// sameContent is nil when cur holds the spec want does.
func sameContent(pool string, cur, want *unstructured.Unstructured) error {
	if sameJSON(cur.Object["spec"], want.Object["spec"]) {
		return nil
	}
	return &contentError{Name: want.GetName(), Pool: pool}
}

// ensureRendered creates the pool's rendered MachineConfig unless it
// exists; an existing one must hold the same spec. A stored config found
// equal is not compared again until it changes: a large one costs a
// decode of both sides.
func (c *Controller) ensureRendered(ctx context.Context, res *render.Result, pool *unstructured.Unstructured) error {
	name := res.Name
	cur := c.src.MachineConfig(name)
	if cur != nil && c.wasVerified(name, cur.GetResourceVersion()) {
		return nil
	}
	obj, err := renderedObject(res, pool)
	if err != nil {
		return err
	}
	mcs := c.dyn.Resource(kube.MachineConfigs)
	if cur == nil {
		_, err = mcs.Create(ctx, obj, metav1.CreateOptions{DryRun: c.dryRun(), FieldManager: fieldManager})
		if err == nil {
			c.m.renders.WithLabelValues(c.dryRunLabel()).Inc()
			c.wrote(res.Pool, "created rendered MachineConfig "+name)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating MachineConfig %s: %w", name, err)
		}
		// The cache is behind: another write of ours, or someone else's.
		if cur, err = mcs.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("reading MachineConfig %s: %w", name, err)
		}
	}
	if err := sameContent(res.Pool, cur, obj); err != nil {
		return err
	}
	c.verified(name, cur.GetResourceVersion())
	return nil
}

// wasVerified says whether the stored config was found equal to its render
// at this resourceVersion.
func (c *Controller) wasVerified(name, rv string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return rv != "" && c.checked[name] == rv
}

func (c *Controller) verified(name, rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checked == nil || len(c.checked) > maxChecked {
		c.checked = map[string]string{} // forget the old ones, rather than grow
	}
	c.checked[name] = rv
}

// maxChecked bounds the verified-config memo.
const maxChecked = 4096

func (c *Controller) dryRun() []string {
	if c.cfg.DryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}

func (c *Controller) dryRunLabel() string {
	if c.cfg.DryRun {
		return "true"
	}
	return "false"
}

// patchPool merge-patches a pool (or its status) with the patch build
// returns for it, nil meaning nothing to do, starting from pool (the cached
// one when nil). The patch carries the resourceVersion it was built from,
// so a concurrent change is a conflict: the pool is read again and the
// patch rebuilt, never written over it. It returns the pool as last seen.
func (c *Controller) patchPool(ctx context.Context, pool *unstructured.Unstructured, name, selKey, subresource string,
	build func(*unstructured.Unstructured) map[string]any, what string) (*unstructured.Unstructured, error) {
	res := c.dyn.Resource(kube.MachineConfigPools)
	if pool == nil {
		pool = c.src.Pool(name)
	}
	var subs []string
	if subresource != "" {
		subs = []string{subresource}
	}
	for attempt := 0; pool != nil; attempt++ {
		if selectorKey(pool) != selKey {
			// Rendered from another selector: nothing is written, and
			// the change has signalled another render.
			return nil, nil
		}
		patch := build(pool)
		if patch == nil {
			return pool, nil
		}
		patch["metadata"] = map[string]any{"resourceVersion": pool.GetResourceVersion()}
		body, err := json.Marshal(patch)
		if err != nil {
			return nil, err
		}
		got, err := res.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{DryRun: c.dryRun(), FieldManager: fieldManager}, subs...)
		if err == nil {
			kind := "configuration"
			if subresource != "" {
				kind = subresource
			}
			c.m.poolUpdates.WithLabelValues(kind, c.dryRunLabel()).Inc()
			c.wrote(name, what)
			if c.cfg.DryRun {
				return pool, nil // got is what would have been
			}
			return got, nil
		}
		if !apierrors.IsConflict(err) || attempt >= maxConflictRetries {
			return nil, fmt.Errorf("updating MachineConfigPool %s: %w", name, err)
		}
		c.m.conflicts.Inc()
		c.log.Debug("conflict; reading the pool again", "pool", name, "attempt", attempt+1)
		if pool, err = res.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading MachineConfigPool %s: %w", name, err)
		}
	}
	return nil, nil
}

type condition struct{ status, reason, message string }

// setCondition sets the pool's RenderDegraded condition as OpenShift's
// helpers do: the transition time moves only when the status changes.
func (c *Controller) setCondition(ctx context.Context, from *unstructured.Unstructured, pool, selKey string, want condition) error {
	what := "cleared " + conditionRenderDegraded
	if want.status == "True" {
		what = "set " + conditionRenderDegraded
	}
	_, err := c.patchPool(ctx, from, pool, selKey, "status", func(p *unstructured.Unstructured) map[string]any {
		conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
		i := -1
		for j, x := range conds {
			if m, ok := x.(map[string]any); ok && m["type"] == conditionRenderDegraded {
				i = j
			}
		}
		now := time.Now().UTC().Format(time.RFC3339)
		next := map[string]any{"type": conditionRenderDegraded, "status": want.status, "reason": want.reason,
			"message": want.message, "lastTransitionTime": now}
		if i >= 0 {
			cur := conds[i].(map[string]any)
			if cur["status"] == want.status && cur["reason"] == want.reason && cur["message"] == want.message {
				return nil
			}
			if cur["status"] == want.status && cur["lastTransitionTime"] != nil {
				next["lastTransitionTime"] = cur["lastTransitionTime"]
			}
			conds[i] = next
		} else {
			conds = append(conds, next)
		}
		return map[string]any{"status": map[string]any{"conditions": conds}}
	}, what)
	return err
}

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

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
}

func (e *contentError) Error() string {
	return fmt.Sprintf("%s: MachineConfig/%s: $.spec: a rendered MachineConfig of that name exists with other content; names are content-addressed, so it is not rewritten (delete it to have it written again)", kube.Origin, e.Name)
}

// writer writes pools and rendered configs.
type writer struct {
	dyn    dynamic.Interface
	raw    rest.Interface // rendered configs are created as bytes
	meta   metadata.Interface
	src    *kube.Source
	m      *metrics
	book   *statusBook
	events *eventLog
	log    *slog.Logger
	dryRun bool
	// baseImage is the release's OS image, for OSImageURLOverridden.
	baseImage func() string
	// pointed is told of a pool pointed at its render, stored at a
	// resourceVersion (the reconcile check's cache).
	pointed func(pool string, res *render.Result, rv string)

	checked verifiedConfigs
	last    lastWrites
	left    leftConfigs
}

// renderedBody is the rendered MachineConfig to store, as JSON: the
// renderer's object, owned by the pool as OpenShift's render controller owns
// it. It is encoded once and sent as it is: a full-size config costs a
// few hundred kilobytes each way, and a worker edit writes one per pool.
func renderedBody(res *render.Result, pool *unstructured.Unstructured) ([]byte, error) {
	yes := true
	owners, err := json.Marshal([]metav1.OwnerReference{{
		APIVersion: render.APIVersion, Kind: render.KindMachineConfigPool,
		Name: pool.GetName(), UID: pool.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes,
	}})
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", res.Name, err)
	}
	mc := *res.MachineConfig
	mc.Metadata.Extra = maps.Clone(mc.Metadata.Extra)
	if mc.Metadata.Extra == nil {
		mc.Metadata.Extra = map[string]json.RawMessage{}
	}
	mc.Metadata.Extra["ownerReferences"] = owners
	body, err := mc.MarshalRendered()
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", res.Name, err)
	}
	return body, nil
}

// sameContent is nil when cur holds the spec want does.
func sameContent(cur, want *unstructured.Unstructured) error {
	if sameJSON(cur.Object["spec"], want.Object["spec"]) {
		return nil
	}
	return &contentError{Name: want.GetName()}
}

// ensureRendered creates the pool's rendered MachineConfig unless it
// exists; an existing one must hold the same spec. A stored config found
// equal is not compared again until it changes: a large one costs a
// decode of both sides. It returns the stored config's resourceVersion.
func (w *writer) ensureRendered(ctx context.Context, res *render.Result, pool *unstructured.Unstructured) (string, error) {
	name := res.Name
	cur := w.src.MachineConfig(name)
	if cur != nil && w.checked.was(name, cur.GetResourceVersion()) {
		return cur.GetResourceVersion(), nil
	}
	body, err := renderedBody(res, pool)
	if err != nil {
		return "", err
	}
	if cur == nil {
		rv, err := w.create(ctx, body)
		if err == nil {
			w.m.renders.WithLabelValues(w.dryRunLabel()).Inc()
			w.book.wrote(res.Pool, "created rendered MachineConfig "+name)
			w.generated(res, w.baseImage())
			w.checked.found(name, rv)
			return rv, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating MachineConfig %s: %w", name, err)
		}
		// The cache is behind: another write of ours, or someone else's.
		// Ours (the resourceVersion it was created at) needs no compare.
		m, err := w.meta.Resource(kube.MachineConfigs).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("reading MachineConfig %s: %w", name, err)
		}
		if w.checked.was(name, m.GetResourceVersion()) {
			return m.GetResourceVersion(), nil
		}
		if cur, err = w.fetch(ctx, name); err != nil {
			return "", fmt.Errorf("reading MachineConfig %s: %w", name, err)
		}
	}
	if _, whole := cur.Object["spec"]; !whole {
		// The cache keeps no rendered config's spec.
		if cur, err = w.fetch(ctx, name); err != nil {
			return "", fmt.Errorf("reading MachineConfig %s: %w", name, err)
		}
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(body); err != nil {
		return "", fmt.Errorf("encoding %s: %w", name, err)
	}
	if err := sameContent(cur, obj); err != nil {
		return "", err
	}
	w.checked.found(name, cur.GetResourceVersion())
	return cur.GetResourceVersion(), nil
}

// fetch reads a MachineConfig whole from the API server.
func (w *writer) fetch(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return w.dyn.Resource(kube.MachineConfigs).Get(ctx, name, metav1.GetOptions{})
}

// create posts a rendered MachineConfig's JSON and returns its
// resourceVersion. The API server answers with the object's metadata only
// (as=PartialObjectMetadata): the whole object again would cost it an
// encode and a gzip of a few hundred kilobytes per pool, and this process
// their reading, for one field. The renderer writes only the CRD's fields,
// so the API server is spared looking for unknown ones
// (fieldValidation=Ignore; its default, Warn, decodes the body a second
// time, strictly).
func (w *writer) create(ctx context.Context, body []byte) (string, error) {
	req := w.raw.Post().Resource(kube.MachineConfigs.Resource).Param("fieldManager", fieldManager).
		Param("fieldValidation", metav1.FieldValidationIgnore).
		SetHeader("Content-Type", "application/json").SetHeader("Accept", metadataOnly).Body(body)
	if w.dryRun {
		req = req.Param("dryRun", metav1.DryRunAll)
	}
	raw, err := req.Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	var created struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &created); err != nil {
		return "", fmt.Errorf("reading the created object: %w", err)
	}
	return created.Metadata.ResourceVersion, nil
}

// metadataOnly asks for an object's metadata only, or the whole object from
// an API server that cannot (the metadata client's Accept).
const metadataOnly = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

// rawClient posts JSON bodies to machineconfiguration.openshift.io/v1.
func rawClient(rc *rest.Config) (rest.Interface, error) {
	c := rest.CopyConfig(rc)
	gv := kube.MachineConfigs.GroupVersion()
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return rest.RESTClientFor(c)
}

// verifiedConfigs are the rendered configs found equal to their render (or
// created by this replica), by the resourceVersion they were found at.
type verifiedConfigs struct {
	mu sync.Mutex
	rv map[string]string
}

// was says whether the stored config was found equal to its render at
// this resourceVersion.
func (v *verifiedConfigs) was(name, rv string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return rv != "" && v.rv[name] == rv
}

func (v *verifiedConfigs) found(name, rv string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.rv == nil || len(v.rv) > maxChecked {
		v.rv = map[string]string{} // forget the old ones, rather than grow
	}
	v.rv[name] = rv
}

// maxChecked bounds the verified-config memo.
const maxChecked = 4096

func (w *writer) dryRunOpt() []string {
	if w.dryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}

func (w *writer) dryRunLabel() string { return dryRunLabel(w.dryRun) }

func dryRunLabel(dryRun bool) string {
	if dryRun {
		return "true"
	}
	return "false"
}

// patchPool merge-patches a pool (or its status) with the patch build
// returns for it, nil meaning nothing to do, starting from pool (the cached
// one when nil). The patch carries the resourceVersion it was built from,
// so a concurrent change is a conflict: the pool is read again and the
// patch rebuilt, never written over it. It returns the pool as last seen.
func (w *writer) patchPool(ctx context.Context, pool *unstructured.Unstructured, name, selKey, subresource string,
	build func(*unstructured.Unstructured) map[string]any, what string) (*unstructured.Unstructured, error) {
	res := w.dyn.Resource(kube.MachineConfigPools)
	if pool == nil {
		pool = w.last.ahead(w.src.Pool(name))
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
		got, err := res.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{DryRun: w.dryRunOpt(), FieldManager: fieldManager}, subs...)
		if err == nil {
			kind := "configuration"
			if subresource != "" {
				kind = subresource
			}
			w.m.poolUpdates.WithLabelValues(kind, w.dryRunLabel()).Inc()
			w.book.wrote(name, what)
			if w.dryRun {
				return pool, nil // got is what would have been
			}
			w.last.wrote(pool.GetResourceVersion(), got)
			return got, nil
		}
		if !apierrors.IsConflict(err) || attempt >= maxConflictRetries {
			return nil, fmt.Errorf("updating MachineConfigPool %s: %w", name, err)
		}
		w.m.conflicts.Inc()
		w.log.Debug("conflict; reading the pool again", "pool", name, "attempt", attempt+1)
		if pool, err = res.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading MachineConfigPool %s: %w", name, err)
		}
	}
	return nil, nil
}

// wrotePoolAt is a pool as this replica's last write of it returned it, and
// the resourceVersion that write replaced.
type wrotePoolAt struct {
	from string
	pool *unstructured.Unstructured
}

// lastWrites are the pools as this replica's writes returned them.
type lastWrites struct {
	mu    sync.Mutex
	pools map[string]wrotePoolAt
}

func (l *lastWrites) wrote(from string, got *unstructured.Unstructured) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pools == nil {
		l.pools = map[string]wrotePoolAt{}
	}
	l.pools[got.GetName()] = wrotePoolAt{from: from, pool: got}
}

// ahead returns the pool as this replica last wrote it while the cache
// still holds the version that write replaced: under load the watch lags
// the writes, and a patch built from the cached pool would conflict and
// cost a read and a second write.
func (l *lastWrites) ahead(cached *unstructured.Unstructured) *unstructured.Unstructured {
	if cached == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.pools[cached.GetName()]; ok && last.from == cached.GetResourceVersion() {
		return last.pool
	}
	return cached
}

type condition struct{ status, reason, message string }

// setConditions sets conditions of the pool's status as OpenShift's
// helpers do: the transition time moves only when the status changes. A
// condition set False that the pool does not carry is not added
// (RenderPending appears only once a pool has waited).
func (w *writer) setConditions(ctx context.Context, from *unstructured.Unstructured, pool, selKey string, want map[string]condition) error {
	var what []string
	for _, typ := range slices.Sorted(maps.Keys(want)) {
		verb := "cleared "
		if want[typ].status == "True" {
			verb = "set "
		}
		what = append(what, verb+typ)
	}
	_, err := w.patchPool(ctx, from, pool, selKey, "status", func(p *unstructured.Unstructured) map[string]any {
		conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
		if !withConditions(&conds, want, time.Now()) {
			return nil
		}
		return map[string]any{"status": map[string]any{"conditions": conds}}
	}, strings.Join(what, ", "))
	return err
}

// withConditions sets the conditions in conds; false when nothing changes.
func withConditions(conds *[]any, want map[string]condition, now time.Time) bool {
	changed := false
	for _, typ := range slices.Sorted(maps.Keys(want)) {
		c := want[typ]
		i := slices.IndexFunc(*conds, func(x any) bool { m, ok := x.(map[string]any); return ok && m["type"] == typ })
		next := map[string]any{"type": typ, "status": c.status, "reason": c.reason, "message": c.message,
			"lastTransitionTime": now.UTC().Format(time.RFC3339)}
		if i < 0 {
			if c.status == "False" && typ == conditionRenderPending {
				continue
			}
			*conds = append(*conds, next)
			changed = true
			continue
		}
		cur := (*conds)[i].(map[string]any)
		if cur["status"] == c.status && cur["reason"] == c.reason && cur["message"] == c.message {
			continue
		}
		if cur["status"] == c.status && cur["lastTransitionTime"] != nil {
			next["lastTransitionTime"] = cur["lastTransitionTime"]
		}
		(*conds)[i] = next
		changed = true
	}
	return changed
}

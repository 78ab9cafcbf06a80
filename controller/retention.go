package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// nodesGVR: Nodes are read (listed, metadata only) for the configs they run.
var nodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// The node annotations the machine-config-daemon keeps: the rendered config
// a node runs, and the one it is moving to.
const (
	annotationCurrentConfig = "machineconfiguration.openshift.io/currentConfig"
	annotationDesiredConfig = "machineconfiguration.openshift.io/desiredConfig"
)

// RenderedConfig is one rendered MachineConfig and what retention makes of it.
type RenderedConfig struct {
	Name            string
	Pool            string
	Created         time.Time
	UID             types.UID
	ResourceVersion string
	// InUse says who names it: "pool worker spec", "node n1 currentConfig".
	// A config in use is never deleted.
	InUse []string
	// Kept says why one not in use is kept ("newest 3 of pool worker");
	// empty for a config retention would prune.
	Kept string
}

// inventory is every rendered MachineConfig of a cluster, sorted by pool
// and newest first, with the names every pool and node uses.
type inventory struct {
	Configs []*RenderedConfig
	Pools   []string
}

// renderedName is OpenShift's rendered-<pool>-<md5 hex>.
var renderedName = regexp.MustCompile(`^rendered-(.+)-[0-9a-f]{32}$`)

// renderedPool says whether an object is a rendered config, and of which
// pool: a controller generated it and either a pool owns it or its name is
// a rendered one. (Generated configs such as 00-worker carry the annotation
// but belong to no pool.)
func renderedPool(m *metav1.PartialObjectMetadata) (string, bool) {
	if _, ok := m.Annotations[render.AnnotationGeneratedByController]; !ok {
		return "", false
	}
	for _, o := range m.OwnerReferences {
		if o.Kind == render.KindMachineConfigPool && o.Controller != nil && *o.Controller {
			return o.Name, true
		}
	}
	if g := renderedName.FindStringSubmatch(m.Name); g != nil {
		return g[1], true
	}
	return "", false
}

// takeInventory lists the rendered configs (metadata only), then the pools
// and the nodes, fresh from the API server: what is in use must not come
// from a cache that may be behind.
func takeInventory(ctx context.Context, dyn dynamic.Interface, meta metadata.Interface) (*inventory, error) {
	// The rendered configs first: one created after this list is simply not
	// a candidate, whereas listed after the pools it could be in use by a pool
	// re-pointed meanwhile and still look unused.
	mcs, err := meta.Resource(kube.MachineConfigs).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing MachineConfigs: %w", err)
	}
	uses, pools, err := inUse(ctx, dyn, meta)
	if err != nil {
		return nil, err
	}
	inv := &inventory{Pools: pools}
	for i := range mcs.Items {
		m := &mcs.Items[i]
		pool, ok := renderedPool(m)
		if !ok {
			continue
		}
		inv.Configs = append(inv.Configs, &RenderedConfig{Name: m.Name, Pool: pool, Created: m.CreationTimestamp.Time,
			UID: m.UID, ResourceVersion: m.ResourceVersion, InUse: uses[m.Name]})
	}
	slices.SortFunc(inv.Configs, newestFirst)
	slices.Sort(inv.Pools)
	return inv, nil
}

// inUse lists, fresh from the API server, who names each rendered config:
// pools (spec and status) and nodes (currentConfig, desiredConfig); and the
// pools' names.
func inUse(ctx context.Context, dyn dynamic.Interface, meta metadata.Interface) (map[string][]string, []string, error) {
	uses := map[string][]string{}
	pools, err := dyn.Resource(kube.MachineConfigPools).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing MachineConfigPools: %w", err)
	}
	var names []string
	for _, p := range pools.Items {
		names = append(names, p.GetName())
		for _, where := range []string{"spec", "status"} {
			if n, _, _ := unstructured.NestedString(p.Object, where, "configuration", "name"); n != "" {
				uses[n] = append(uses[n], fmt.Sprintf("pool %s %s", p.GetName(), where))
			}
		}
	}
	nodes, err := meta.Resource(nodesGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing Nodes: %w", err)
	}
	for _, n := range nodes.Items {
		for _, a := range []string{annotationCurrentConfig, annotationDesiredConfig} {
			if v := n.Annotations[a]; v != "" {
				uses[v] = append(uses[v], fmt.Sprintf("node %s %s", n.Name, strings.TrimPrefix(a, "machineconfiguration.openshift.io/")))
			}
		}
	}
	return uses, names, nil
}

// newestFirst orders by pool, then newest first.
func newestFirst(a, b *RenderedConfig) int {
	if c := strings.Compare(a.Pool, b.Pool); c != 0 {
		return c
	}
	return olderFirst(b, a)
}

// olderFirst orders by creation time. Creation times have a resolution of
// a second, so ties go to the resourceVersion (etcd's revision, which
// grows), then the name.
func olderFirst(a, b *RenderedConfig) int {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	x, err1 := strconv.ParseUint(a.ResourceVersion, 10, 64)
	y, err2 := strconv.ParseUint(b.ResourceVersion, 10, 64)
	if err1 == nil && err2 == nil && x != y {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a.Name, b.Name)
}

// Plan marks what retention keeps: every config in use, and beyond those
// the keep newest of each pool. It returns the rest, oldest first, limited
// to pool when not empty and to the oldest count when count > 0 (as `oc adm
// prune renderedmachineconfigs --count` does).
func (inv *inventory) Plan(keep int, pool string, count int) []*RenderedConfig {
	kept := map[string]int{}
	var out []*RenderedConfig
	for _, r := range inv.Configs {
		r.Kept = ""
		if len(r.InUse) > 0 {
			continue
		}
		if kept[r.Pool] < keep {
			kept[r.Pool]++
			r.Kept = fmt.Sprintf("newest %d of pool %s not in use", keep, r.Pool)
			continue
		}
		if pool == "" || r.Pool == pool {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, olderFirst)
	if count > 0 && count < len(out) {
		out = out[:count]
	}
	return out
}

// deleteConfigs deletes each config, with preconditions on its uid and
// resourceVersion so a config changed since the inventory is left alone;
// dryRun sends the deletes with dryRun=All (validated and authorised,
// nothing deleted). It returns the names deleted, and the objects deleted
// (for restoreInUse) with those it already created again taken out.
//
// A node can be pointed at a config after the inventory (by a writer that
// read its pool before the pool moved on; the grace is there for that). So
// who uses what is listed again after the decision, right before the
// deletes, and a config found in use then is kept; and listed once more
// after them, and a deleted config found in use is created again at once,
// with the content it had: names are content-addressed, so it is the same
// config.
func deleteConfigs(ctx context.Context, dyn dynamic.Interface, meta metadata.Interface, configs []*RenderedConfig, dryRun bool) ([]string, map[string]*unstructured.Unstructured, error) {
	uses, _, err := inUse(ctx, dyn, meta)
	if err != nil {
		return nil, nil, fmt.Errorf("checking the configs to prune are unused: %w", err)
	}
	opts := metav1.DeleteOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var done []string
	var errs []error
	saved := map[string]*unstructured.Unstructured{}
	for _, r := range configs {
		if len(uses[r.Name]) > 0 {
			continue // pointed at since the inventory
		}
		obj, err := dyn.Resource(kube.MachineConfigs).Get(ctx, r.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reading MachineConfig %s: %w", r.Name, err))
			continue
		}
		uid, rv := r.UID, r.ResourceVersion
		opts.Preconditions = &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}
		err = meta.Resource(kube.MachineConfigs).Delete(ctx, r.Name, opts)
		switch {
		case err == nil:
			done = append(done, r.Name)
			saved[r.Name] = obj
		case apierrors.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("deleting MachineConfig %s: %w", r.Name, err))
		}
	}
	if !dryRun && len(done) > 0 {
		_, err := restoreInUse(ctx, dyn, meta, saved)
		errs = append(errs, err)
	}
	return done, saved, errors.Join(errs...)
}

// restoreInUse creates again each deleted config some pool or node names,
// and takes it out of deleted; it returns the names created again. A
// config it fails to create stays in deleted, to be tried again; the
// error says which (and which were created again).
func restoreInUse(ctx context.Context, dyn dynamic.Interface, meta metadata.Interface, deleted map[string]*unstructured.Unstructured) ([]string, error) {
	uses, _, err := inUse(ctx, dyn, meta)
	if err != nil {
		return nil, &restoreError{fmt.Errorf("checking the deleted configs are unused: %w", err), slices.Collect(maps.Keys(deleted))}
	}
	var restored, failed []string
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(deleted)) {
		if len(uses[name]) == 0 {
			continue
		}
		o := deleted[name].DeepCopy()
		for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"} {
			unstructured.RemoveNestedField(o.Object, "metadata", f)
		}
		if _, err := dyn.Resource(kube.MachineConfigs).Create(ctx, o, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("MachineConfig %s was pruned as %s started using it, and cannot be created again: %w", name, strings.Join(uses[name], ", "), err))
			failed = append(failed, name)
			continue
		}
		delete(deleted, name)
		restored = append(restored, name)
		errs = append(errs, fmt.Errorf("MachineConfig %s was pruned as %s started using it; created again", name, strings.Join(uses[name], ", ")))
	}
	if len(failed) > 0 {
		return restored, &restoreError{errors.Join(errs...), failed}
	}
	return restored, errors.Join(errs...)
}

// restoreError is a restore that left configs a pool or node may name
// missing: Pending names them.
type restoreError struct {
	err     error
	pending []string
}

func (e *restoreError) Error() string { return e.err.Error() }
func (e *restoreError) Unwrap() error { return e.err }

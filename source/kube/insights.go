package kube

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// healthInsights are the Update Status API's health insights (openshift/api
// PR #2233, not merged): cluster-scoped, their content in status.
var healthInsights = schema.GroupVersionResource{Group: "update.openshift.io", Version: "v1alpha1", Resource: "healthinsights"}

// insightsLabel marks the healthInsights mcs writes, so that it removes
// only its own.
const insightsLabel = "app.kubernetes.io/managed-by"

// HealthInsight is one condition told to the update tooling: the same
// content as the alert it mirrors.
type HealthInsight struct {
	// Name is the object's name (mcs-<condition>[-<pool>]).
	Name string
	// Pools are the MachineConfigPools concerned (scope WorkerPool, or
	// ControlPlane for master alone).
	Pools []string
	// Level is Info, Warning, Error or Critical; Type the impact type
	// ("Cluster Capacity", "Update Stalled", ...).
	Level, Type string
	Summary     string
	Description string
	// Reference is the runbook's URL.
	Reference string
}

// InsightWriter keeps the healthInsights mcs writes equal to a desired set,
// where the API server serves the resource; where it does not, it writes
// nothing and says nothing.
type InsightWriter struct {
	client  dynamic.Interface
	disco   discoverer
	manager string // insightsLabel's value
	now     func() time.Time
}

// NewInsightWriter returns a writer with rc's credentials; manager names
// the writer in each object's managed-by label.
func NewInsightWriter(rc *rest.Config, manager string, now func() time.Time) (*InsightWriter, error) {
	client, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("health insights: %w", err)
	}
	disco, err := newDiscoverer(rc)
	if err != nil {
		return nil, fmt.Errorf("health insights: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	return &InsightWriter{client: client, disco: disco, manager: manager, now: now}, nil
}

// Sync makes the API server's healthInsights of this writer the desired
// ones: created, their status updated when it differs (startedAt kept),
// and removed when their condition cleared. It reports whether the
// resource is served; not served is no error.
func (w *InsightWriter) Sync(ctx context.Context, desired []HealthInsight) (bool, error) {
	list, err := w.disco.ServerResourcesForGroupVersion(ctx, healthInsights.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", healthInsights.GroupVersion(), err)
	}
	if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == healthInsights.Resource }) {
		return false, nil
	}
	res := w.client.Resource(healthInsights)
	have, err := res.List(ctx, metav1.ListOptions{LabelSelector: insightsLabel + "=" + w.manager})
	if err != nil {
		return true, fmt.Errorf("listing health insights: %w", err)
	}
	current := map[string]*unstructured.Unstructured{}
	for i := range have.Items {
		current[have.Items[i].GetName()] = &have.Items[i]
	}
	var errs []error
	for _, hi := range desired {
		if err := w.put(ctx, res, current[hi.Name], hi); err != nil {
			errs = append(errs, err)
		}
		delete(current, hi.Name)
	}
	for name := range current {
		if err := res.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting health insight %s: %w", name, err))
		}
	}
	if len(errs) > 0 {
		return true, fmt.Errorf("health insights: %v", errs)
	}
	return true, nil
}

// put creates hi, or updates the status of cur when it differs.
func (w *InsightWriter) put(ctx context.Context, res dynamic.NamespaceableResourceInterface, cur *unstructured.Unstructured, hi HealthInsight) error {
	started := w.now().UTC().Format(time.RFC3339)
	if cur == nil {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": healthInsights.GroupVersion().String(), "kind": "HealthInsight",
			"metadata": map[string]any{"name": hi.Name, "labels": map[string]any{insightsLabel: w.manager}},
			"spec":     map[string]any{},
		}}
		created, err := res.Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating health insight %s: %w", hi.Name, err)
		}
		cur = created
	} else if s, ok, _ := unstructured.NestedString(cur.Object, "status", "startedAt"); ok && s != "" {
		started = s
	}
	status := hi.status(started)
	if old, ok := cur.Object["status"]; ok && fmt.Sprint(old) == fmt.Sprint(status) {
		return nil
	}
	cur.Object["status"] = status
	if _, err := res.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating health insight %s: %w", hi.Name, err)
	}
	return nil
}

// status is hi in the #2233 shape: scope{type, resources}, impact{level,
// type, summary, description}, remediation{reference}.
func (hi HealthInsight) status(started string) map[string]any {
	scope := "WorkerPool"
	if len(hi.Pools) == 1 && hi.Pools[0] == "master" {
		scope = "ControlPlane"
	}
	var resources []any
	for _, p := range hi.Pools {
		resources = append(resources, map[string]any{"group": MachineConfigPools.Group, "resource": MachineConfigPools.Resource, "name": p})
	}
	st := map[string]any{
		"startedAt":   started,
		"scope":       map[string]any{"type": scope},
		"impact":      map[string]any{"level": hi.Level, "type": hi.Type, "summary": hi.Summary, "description": hi.Description},
		"remediation": map[string]any{"reference": hi.Reference},
	}
	if resources != nil {
		st["scope"].(map[string]any)["resources"] = resources
	}
	return st
}

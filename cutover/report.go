package cutover

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Change is one of apply's changes as the cluster holds it now.
type Change struct {
	Step    Step
	Changed bool
	// Detail is what the cluster holds: the objects in place, the
	// replicas, the image.
	Detail string
}

// Report reads, changing nothing, which of apply's changes the cluster
// holds now, in apply's order: the Record, mcs's ServiceAccount and RBAC,
// the override, the operator's replicas, the DaemonSet. It reads the
// objects themselves, not what the Record says was begun, so a change
// begun and refused shows as not made.
func (c *Cutover) Report(ctx context.Context) ([]Change, error) {
	r, err := (&ledger{cms: c.book.cms}).load(ctx)
	if err != nil {
		return nil, err
	}
	out := []Change{{Step: StepRecord, Changed: r != nil, Detail: "ConfigMap " + Namespace + "/" + RecordName}}
	var present []string
	for _, o := range c.cfg.Manifests {
		if o.GetKind() == "DaemonSet" {
			continue
		}
		res, err := c.resource(o)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		_, err = res.Get(ctx, o.GetName(), metav1.GetOptions{})
		switch {
		case err == nil:
			name := o.GetName()
			if ns := o.GetNamespace(); ns != "" {
				name = ns + "/" + name
			}
			present = append(present, o.GetKind()+" "+name)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	// Present is not changed: they may be from before this cutover (an
	// earlier one's, or an admin's); only a step begun wrote them.
	out = append(out, Change{Step: StepRBAC, Changed: len(present) > 0 && r != nil && r.has(StepRBAC), Detail: strings.Join(present, ", ")})
	p := &Plan{}
	if err := c.ov.plan(ctx, p); err != nil {
		return nil, err
	}
	set := p.Override != nil && p.Override["unmanaged"] == true
	out = append(out, Change{Step: StepOverride, Changed: set && r != nil && r.OverrideAdded,
		Detail: fmt.Sprintf("spec.overrides: Deployment %s/%s unmanaged: %v", Namespace, Operator, set)})
	dep, err := c.cfg.Kube.AppsV1().Deployments(Namespace).Get(ctx, Operator, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Deployment %s/%s: %w", Namespace, Operator, err)
	}
	n := ptrValue(dep.Spec.Replicas, 1)
	scaled := r != nil && r.has(StepScale) && n != r.OperatorReplicas
	detail := fmt.Sprintf("replicas %d", n)
	if scaled {
		detail += fmt.Sprintf(" (before: %d)", r.OperatorReplicas)
	}
	out = append(out, Change{Step: StepScale, Changed: scaled, Detail: detail})
	ds, err := c.cfg.Kube.AppsV1().DaemonSets(Namespace).Get(ctx, DaemonSet, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading DaemonSet %s/%s: %w", Namespace, DaemonSet, err)
	}
	state, _ := serverOf(&ds.Spec.Template.Spec)
	return append(out, Change{Step: StepDaemonSet, Changed: state == StateMCS,
		Detail: fmt.Sprintf("%s's server, image %s", state, imageOf(&ds.Spec.Template.Spec))}), nil
}

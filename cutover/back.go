package cutover

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Back returns the cluster to how apply found it, from apply's Record
// (or, for a cutover made before there was one, from the annotations on
// mcs's DaemonSet), undoing only what apply began, without a moment when
// no server serves: the operator scaled up to its former replicas, the
// ClusterVersion override removed if apply added it (no other entry
// touched); if the DaemonSet runs mcs, a wait until the operator has put
// its own server back (same name: it rolls one node at a time, mcs
// serving on the others) and it has rolled out; only then mcs's other
// objects and the Record deleted. If the operator does not, mcs keeps
// serving and Back says so; run it again.
func (c *Cutover) Back(ctx context.Context) error {
	ds, err := c.cfg.Kube.AppsV1().DaemonSets(Namespace).Get(ctx, DaemonSet, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading DaemonSet %s/%s: %w", Namespace, DaemonSet, err)
	}
	mcs := err == nil && isMCS(ds)
	r, err := c.book.load(ctx)
	switch {
	case err != nil:
		return err
	case r == nil && !mcs:
		return fmt.Errorf("no cutover to go back from: no ConfigMap %s/%s, and DaemonSet %s does not run mcs", Namespace, RecordName, DaemonSet)
	case r == nil:
		r = &Record{OperatorReplicas: replicasOf(ds), OverrideAdded: ds.Annotations[annotationOverride] != "false",
			Begun: []Step{StepRBAC, StepOverride, StepScale, StepDaemonSet}}
	}
	if r.has(StepScale) {
		// The operator puts its server back: at least one replica, even
		// where an admin had scaled it to 0 before the cutover.
		n := max(r.OperatorReplicas, 1)
		if n != r.OperatorReplicas {
			c.log.Warn("the operator had 0 replicas before the cutover; scaled to 1 to put its server back", "deployment", Namespace+"/"+Operator)
		}
		if err := c.scaleOperator(ctx, n); err != nil {
			return err
		}
	}
	if r.has(StepOverride) && r.OverrideAdded {
		removed, err := c.ov.remove(ctx)
		if err != nil {
			return err
		}
		c.log.Info("ClusterVersion override", "removed", removed)
	}
	if mcs {
		if err := c.waiter().rollout(ctx, StateOpenShift, ""); err != nil {
			return fmt.Errorf("%w: mcs keeps serving until the operator puts its server back (oc -n %s get deployment %s)", err, Namespace, Operator)
		}
	}
	for _, o := range c.cfg.Manifests {
		if o.GetKind() == "DaemonSet" {
			continue // the operator's own
		}
		res, err := c.resource(o)
		if meta.IsNoMatchError(err) {
			continue // never applied: see apply
		}
		if err != nil {
			return err
		}
		if err := res.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		c.log.Info("deleted", "kind", o.GetKind(), "name", o.GetName(), "namespace", o.GetNamespace())
	}
	return c.book.remove(ctx)
}

// isMCS says whether ds asks for mcs's server.
func isMCS(ds *appsv1.DaemonSet) bool {
	s, _ := serverOf(&ds.Spec.Template.Spec)
	return s == StateMCS
}

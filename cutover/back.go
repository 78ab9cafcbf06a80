package cutover

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Back returns the cluster to OpenShift's server without a moment when
// none serves: the operator scaled up to its former replicas, the
// ClusterVersion override removed if apply added it (no other entry
// touched), then a wait until the operator has put its own server back in
// the DaemonSet (same name: it rolls one node at a time, mcs serving on
// the others) and it has rolled out; only then mcs's other objects are
// deleted. If the operator does not, mcs keeps serving and Back says so.
func (c *Cutover) Back(ctx context.Context) error {
	ds, err := c.cfg.Kube.AppsV1().DaemonSets(Namespace).Get(ctx, DaemonSet, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading DaemonSet %s/%s: %w", Namespace, DaemonSet, err)
	}
	if state, _ := serverOf(ds); state != StateMCS {
		return fmt.Errorf("DaemonSet %s/%s does not run mcs: nothing to go back from", Namespace, DaemonSet)
	}
	if err := c.scaleOperator(ctx, replicasOf(ds)); err != nil {
		return err
	}
	if ds.Annotations[annotationOverride] != "false" {
		removed, err := c.removeOverride(ctx)
		if err != nil {
			return err
		}
		c.log.Info("ClusterVersion override", "removed", removed)
	}
	operators := func(ds *appsv1.DaemonSet) bool { s, _ := serverOf(ds); return s == StateOpenShift }
	if err := c.waitRollout(ctx, operators); err != nil {
		return fmt.Errorf("%w: mcs keeps serving until the operator puts its server back (oc -n %s get deployment %s)", err, Namespace, Operator)
	}
	for _, o := range c.cfg.Manifests {
		if o.GetKind() == "DaemonSet" {
			continue // the operator's own now
		}
		r, err := c.resource(o)
		if meta.IsNoMatchError(err) {
			continue // never applied: see apply
		}
		if err != nil {
			return err
		}
		if err := r.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		c.log.Info("deleted", "kind", o.GetKind(), "name", o.GetName(), "namespace", o.GetNamespace())
	}
	return nil
}

package cutover

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
)

// ErrNotOpenShift is a plan that finds no OpenShift server to replace.
var ErrNotOpenShift = errors.New("no OpenShift machine-config-server DaemonSet to replace")

// Prepare applies server-side every manifest but the DaemonSet: mcs's
// ServiceAccount and its read-only RBAC, which change nothing a node sees
// and which a preflight as that ServiceAccount checks.
func (c *Cutover) Prepare(ctx context.Context) error {
	for _, o := range c.cfg.Manifests {
		if o.GetKind() == "DaemonSet" {
			continue
		}
		if err := c.apply(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// Apply runs the plan after Prepare: the ClusterVersion override (only
// the operator's entry), the operator scaled to zero and its pods gone,
// then the DaemonSet applied server-side and its rollout waited for.
// OpenShift's server serves until mcs's pods replace its, one node at a
// time, as the DaemonSet rolls.
func (c *Cutover) Apply(ctx context.Context, p *Plan) error {
	if p.State != StateOpenShift || p.DaemonSet == nil {
		return fmt.Errorf("%w (the cluster runs: %s)", ErrNotOpenShift, p.State)
	}
	if err := c.patchOverride(ctx, p); err != nil {
		return err
	}
	c.log.Info("ClusterVersion override set", "deployment", Namespace+"/"+Operator)
	if err := c.scaleOperator(ctx, 0); err != nil {
		return err
	}
	if err := c.waitOperatorGone(ctx); err != nil {
		return err
	}
	if err := c.apply(ctx, p.DaemonSet); err != nil {
		return err
	}
	return c.waitRollout(ctx, func(ds *appsv1.DaemonSet) bool { s, _ := serverOf(ds); return s == StateMCS })
}

// apply applies o server-side as the cutover's field manager, forcing
// ownership of what the operator had set (the image, command, arguments
// and ServiceAccount of its DaemonSet).
func (c *Cutover) apply(ctx context.Context, o *unstructured.Unstructured) error {
	r, err := c.resource(o)
	if meta.IsNoMatchError(err) {
		// mcs's PrometheusRule on a cluster without monitoring: the
		// server runs the same, its alerts are not installed.
		c.log.Warn("not served by this API server: skipped", "kind", o.GetKind(), "name", o.GetName(), "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := r.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
	}
	c.log.Info("applied", "kind", o.GetKind(), "name", o.GetName(), "namespace", o.GetNamespace())
	return nil
}

// scaleOperator sets the operator Deployment's replicas.
func (c *Cutover) scaleOperator(ctx context.Context, n int32) error {
	deps := c.cfg.Kube.AppsV1().Deployments(Namespace)
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: Operator, Namespace: Namespace}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
	if _, err := deps.UpdateScale(ctx, Operator, s, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("scaling Deployment %s/%s to %d: %w", Namespace, Operator, n, err)
	}
	c.log.Info("operator scaled", "replicas", n)
	return nil
}

// waitOperatorGone waits until no pod of the operator's Deployment is
// left: one still running could put its own server back.
func (c *Cutover) waitOperatorGone(ctx context.Context) error {
	dep, err := c.cfg.Kube.AppsV1().Deployments(Namespace).Get(ctx, Operator, metav1.GetOptions{})
	if err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil || sel.Empty() {
		sel = labels.SelectorFromSet(labels.Set{"k8s-app": Operator})
	}
	return c.wait(ctx, "the operator's pods to end", func(ctx context.Context) (bool, error) {
		pods, err := c.cfg.Kube.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		return err == nil && len(pods.Items) == 0, err
	})
}

// waitRollout waits until the DaemonSet is whose want says, and rolled
// out: every scheduled pod updated and available.
func (c *Cutover) waitRollout(ctx context.Context, want func(*appsv1.DaemonSet) bool) error {
	return c.wait(ctx, "DaemonSet "+DaemonSet+" to roll out", func(ctx context.Context) (bool, error) {
		ds, err := c.cfg.Kube.AppsV1().DaemonSets(Namespace).Get(ctx, DaemonSet, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return want(ds) && rolledOut(ds), nil
	})
}

// rolledOut is kubectl rollout status's test for a DaemonSet.
func rolledOut(ds *appsv1.DaemonSet) bool {
	s := ds.Status
	return s.ObservedGeneration >= ds.Generation && s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberAvailable == s.DesiredNumberScheduled
}

// wait polls cond every Interval for at most Timeout.
func (c *Cutover) wait(ctx context.Context, what string, cond wait.ConditionWithContextFunc) error {
	c.log.Info("waiting", "for", what)
	if err := wait.PollUntilContextTimeout(ctx, c.cfg.Interval, c.cfg.Timeout, true, cond); err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// replicasOf reads what apply recorded on mcs's DaemonSet.
func replicasOf(ds *appsv1.DaemonSet) int32 {
	n, err := strconv.ParseInt(ds.Annotations[annotationReplicas], 10, 32)
	if err != nil || n < 1 {
		return 1
	}
	return int32(n)
}

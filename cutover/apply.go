package cutover

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	appsv1 "k8s.io/api/apps/v1"
)

// errNotOpenShift is a plan that finds no OpenShift server to replace.
var errNotOpenShift = errors.New("no OpenShift machine-config-server DaemonSet to replace")

// StepError is apply stopped at Step by Err. What it had changed by then
// is Report's to say, read from the cluster.
type StepError struct {
	Step Step
	Err  error
}

func (e *StepError) Error() string { return fmt.Sprintf("%s: %v", e.Step, e.Err) }
func (e *StepError) Unwrap() error { return e.Err }

// step is one part of apply; changes says it writes what back undoes.
type step struct {
	step    Step
	changes bool
	run     func(context.Context) error
}

// Apply runs the cutover as a transaction. Before its first write it
// checks what every step needs (check); then it keeps a Record of what
// it found and of each change before making it; then, in order: mcs's
// ServiceAccount and read-only RBAC, Config.Preflight, the ClusterVersion
// override (only the operator's entry), the operator scaled to zero and
// its pods gone, the DaemonSet applied server-side, its rollout waited
// for. OpenShift's server serves until mcs's pods replace its, one node at
// a time. On a failure it returns a *StepError and keeps the Record: Back
// undoes what it names, and Apply run again (on a new Plan) resumes,
// each step being idempotent.
func (c *Cutover) Apply(ctx context.Context, p *Plan) error {
	r := p.Record
	switch {
	case r == nil && (p.State != StateOpenShift || p.DaemonSet == nil):
		return &StepError{StepCheck, fmt.Errorf("%w (the cluster runs: %s)", errNotOpenShift, p.State)}
	case r == nil:
		r = newRecord(p, c.cfg.Image)
	case c.cfg.Image != "":
		r.Image = c.cfg.Image
	}
	if err := c.check(ctx); err != nil {
		return &StepError{StepCheck, err}
	}
	r.Done = false
	if err := c.book.save(ctx, r); err != nil {
		return &StepError{StepRecord, err}
	}
	w := c.waiter()
	steps := []step{
		{StepRBAC, true, c.prepare},
		{StepPreflight, false, func(ctx context.Context) error {
			if c.cfg.Preflight == nil {
				return nil
			}
			return c.cfg.Preflight(ctx)
		}},
		{StepOverride, true, func(ctx context.Context) error { return c.ov.patch(ctx, p) }},
		{StepScale, true, func(ctx context.Context) error {
			if err := c.scaleOperator(ctx, 0); err != nil {
				return err
			}
			return w.operatorGone(ctx)
		}},
		{StepDaemonSet, true, func(ctx context.Context) error {
			ds, err := c.daemonSet(r)
			if err != nil {
				return err
			}
			return c.apply(ctx, ds)
		}},
		{StepRollout, false, func(ctx context.Context) error { return w.rollout(ctx, StateMCS, r.Image) }},
	}
	for _, s := range steps {
		if s.changes {
			if err := c.book.begin(ctx, r, s.step); err != nil {
				return &StepError{s.step, err}
			}
		}
		if err := s.run(ctx); err != nil {
			return &StepError{s.step, err}
		}
		c.log.Info("cutover step done", "step", s.step)
	}
	r.Done = true
	if err := c.book.save(ctx, r); err != nil {
		return &StepError{StepRecord, err}
	}
	return nil
}

// prepare applies server-side every manifest but the DaemonSet: mcs's
// ServiceAccount and its read-only RBAC, which change nothing a node sees
// and which a preflight as that ServiceAccount checks.
func (c *Cutover) prepare(ctx context.Context) error {
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

// replicasOf reads what apply recorded on mcs's DaemonSet.
func replicasOf(ds *appsv1.DaemonSet) int32 {
	n, err := strconv.ParseInt(ds.Annotations[annotationReplicas], 10, 32)
	if err != nil || n < 1 {
		return 1
	}
	return int32(n)
}

package cutover

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
)

// waiter waits for what the cutover cannot do itself: the operator's pods
// to end, a DaemonSet's rollout.
type waiter struct {
	c                 *Cutover
	interval, timeout time.Duration
	log               *slog.Logger
}

func (c *Cutover) waiter() *waiter {
	return &waiter{c: c, interval: c.cfg.Interval, timeout: c.cfg.Timeout, log: c.log}
}

// operatorGone waits until no pod of the operator's Deployment is left:
// one still running could put its own server back.
func (w *waiter) operatorGone(ctx context.Context) error {
	k := w.c.cfg.Kube
	dep, err := k.AppsV1().Deployments(Namespace).Get(ctx, Operator, metav1.GetOptions{})
	if err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil || sel.Empty() {
		sel = labels.SelectorFromSet(labels.Set{"k8s-app": Operator})
	}
	return w.wait(ctx, "the operator's pods to end", func() (bool, string, error) {
		pods, err := k.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, "", err
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d left", len(pods.Items)), nil
	})
}

// rollout waits until the DaemonSet asks for want's server (on image,
// when given) and has rolled out: every scheduled pod updated and
// available. A pod that cannot pull image ends the wait at once: the
// rollout would never complete.
func (w *waiter) rollout(ctx context.Context, want State, image string) error {
	return w.wait(ctx, "DaemonSet "+DaemonSet+" to roll out", func() (bool, string, error) {
		ds, err := w.c.cfg.Kube.AppsV1().DaemonSets(Namespace).Get(ctx, DaemonSet, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "no DaemonSet", nil
		}
		if err != nil {
			return false, "", err
		}
		if image != "" {
			pods, err := w.c.pods(ctx, ds)
			if err != nil {
				return false, "", err
			}
			if err := pullFailed(pods, image); err != nil {
				return false, "", err
			}
		}
		s, _ := serverOf(&ds.Spec.Template.Spec)
		done := s == want && (image == "" || imageOf(&ds.Spec.Template.Spec) == image) && rolledOut(ds)
		return done, fmt.Sprintf("it asks for %s's server; %s", s, progress(ds)), nil
	})
}

// progress is a DaemonSet's rollout as its status says.
func progress(ds *appsv1.DaemonSet) string {
	st := ds.Status
	if st.ObservedGeneration < ds.Generation {
		return fmt.Sprintf("the DaemonSet controller has not acted on generation %d yet (observed: %d)", ds.Generation, st.ObservedGeneration)
	}
	return fmt.Sprintf("%d desired, %d updated, %d available", st.DesiredNumberScheduled, st.UpdatedNumberScheduled, st.NumberAvailable)
}

// pullReasons are the kubelet's reasons for a container whose image it
// cannot pull.
var pullReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}

// pullFailed is a pod of image whose node cannot pull it.
func pullFailed(pods []Pod, image string) error {
	for _, p := range pods {
		reason, _, _ := strings.Cut(p.Waiting, ":")
		for _, r := range pullReasons {
			if p.Image == image && reason == r {
				return &PullError{Image: image, Pod: p.Name, Node: p.Node, Reason: p.Waiting}
			}
		}
	}
	return nil
}

// PullError is a pod whose node cannot pull mcs's image.
type PullError struct{ Image, Pod, Node, Reason string }

func (e *PullError) Error() string {
	return fmt.Sprintf("pod %s on node %s cannot pull image %s: %s", e.Pod, e.Node, e.Image, e.Reason)
}

// rolledOut is kubectl rollout status's test for a DaemonSet.
func rolledOut(ds *appsv1.DaemonSet) bool {
	s := ds.Status
	return s.ObservedGeneration >= ds.Generation && s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberAvailable == s.DesiredNumberScheduled
}

// wait polls cond every interval for at most timeout. cond makes its
// requests on the caller's context, not on one the timeout ends, so that
// running out of time reads as that, with what cond saw last, and not as
// a request refused for the deadline.
func (w *waiter) wait(ctx context.Context, what string, cond func() (done bool, seen string, err error)) error {
	w.log.Info("waiting", "for", what)
	var last string
	err := wait.PollUntilContextTimeout(ctx, w.interval, w.timeout, true, func(context.Context) (bool, error) {
		done, seen, err := cond()
		if seen != "" {
			last = seen
		}
		return done, err
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() == nil && wait.Interrupted(err):
		return fmt.Errorf("waiting for %s: not done within %s (last seen: %s)", what, w.timeout, last)
	}
	return fmt.Errorf("waiting for %s: %w", what, err)
}

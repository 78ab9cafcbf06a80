package cutover

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ignition-mcs/mcs/deploy"
	"github.com/ignition-mcs/mcs/internal/kubetest"
)

// openShiftArgs are the arguments the MCO renders for its server.
var openShiftArgs = []string{"start", "--apiserver-url=https://api-int.c.example.com:6443", "--payload-version=4.21.0",
	"--tls-cipher-suites=TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "--tls-min-version=VersionTLS12", "--v=2"}

// monitoring is an admin's own override, which the cutover must keep.
var monitoring = map[string]any{"kind": "Deployment", "group": "apps", "namespace": "openshift-monitoring", "name": "cluster-monitoring-operator", "unmanaged": true}

// openShiftServer is the operator's DaemonSet (its manifest's shape at
// MCO 7ff337a), as the operator writes it: with Update, not apply.
func openShiftServer() *appsv1.DaemonSet {
	labels := map[string]string{"k8s-app": DaemonSet}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: DaemonSet, Namespace: Namespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "machine-config-server",
					HostNetwork:        true,
					NodeSelector:       map[string]string{"node-role.kubernetes.io/master": ""},
					Containers: []corev1.Container{{Name: DaemonSet, Image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:mco",
						Command: []string{"/usr/bin/machine-config-server"}, Args: openShiftArgs}},
					Volumes: []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "machine-config-server-tls"}}}},
				},
			},
		},
	}
}

type rehearsal struct {
	cp  *kubetest.ControlPlane
	co  *Cutover
	ctx context.Context
}

// newRehearsal is a real kube-apiserver holding what the cutover touches:
// the operator's Deployment and its server's DaemonSet, and a ClusterVersion
// with an admin's override. No controller runs: the test plays the
// DaemonSet controller's and the operator's part where the cutover waits
// for them.
func newRehearsal(t *testing.T) *rehearsal {
	cp := kubetest.New(t, true)
	ctx := context.Background()
	k := cp.Kube
	if _, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"openshift-image-registry"} {
		_, _ = k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	}
	labels := map[string]string{"k8s-app": Operator}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: Operator, Namespace: Namespace}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "mco"}}}}}}
	if _, err := k.AppsV1().Deployments(Namespace).Create(ctx, dep, metav1.CreateOptions{FieldManager: "cluster-version-operator"}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.AppsV1().DaemonSets(Namespace).Create(ctx, openShiftServer(), metav1.CreateOptions{FieldManager: "machine-config-operator"}); err != nil {
		t.Fatal(err)
	}
	cp.Apply(t, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
		"metadata": map[string]any{"name": "version"},
		"spec":     map[string]any{"clusterID": "11111111-2222-3333-4444-555555555555", "overrides": []any{monitoring}}}})
	files, err := deploy.OpenShift()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(files)
	if err != nil {
		t.Fatal(err)
	}
	co, err := New(Config{Kube: k, Dynamic: cp.Dynamic, Manifests: objs, Image: "registry.example.com/mcs:v1",
		Interval: 20 * time.Millisecond, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &rehearsal{cp: cp, co: co, ctx: ctx}
}

// plan is the cutover's plan of the cluster as it is now.
func (r *rehearsal) plan(t *testing.T) *Plan {
	t.Helper()
	p, err := r.co.Plan(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (r *rehearsal) clusterVersion(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	cv, err := r.cp.Dynamic.Resource(clusterVersions).Get(r.ctx, "version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cv
}

func (r *rehearsal) overrides(t *testing.T) []any {
	t.Helper()
	list, _, _ := unstructured.NestedSlice(r.clusterVersion(t).Object, "spec", "overrides")
	return list
}

func (r *rehearsal) daemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	ds, err := r.cp.Kube.AppsV1().DaemonSets(Namespace).Get(r.ctx, DaemonSet, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// rollOut plays the DaemonSet controller: once the DaemonSet is whose
// want says, every one of three masters runs it.
func rollOut(t *testing.T, k kubernetes.Interface, want State, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
		ds, err := k.AppsV1().DaemonSets(Namespace).Get(context.Background(), DaemonSet, metav1.GetOptions{})
		if err != nil {
			continue
		}
		if s, _ := serverOf(&ds.Spec.Template.Spec); s != want || rolledOut(ds) && ds.Status.DesiredNumberScheduled == 3 {
			continue
		}
		ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3,
			UpdatedNumberScheduled: 3, NumberAvailable: 3, NumberReady: 3}
		if _, err := k.AppsV1().DaemonSets(Namespace).UpdateStatus(context.Background(), ds, metav1.UpdateOptions{}); err != nil {
			t.Logf("status: %v", err)
		}
	}
}

// The cutover and the way back against a real API server: plan reads the
// OpenShift server's arguments and the overrides; apply keeps the admin's
// override and appends only the operator's, scales the operator to zero
// and applies deploy/openshift server-side with OpenShift's arguments;
// back scales the operator up, removes only its override, and deletes
// mcs's objects only after the operator's server has rolled out again,
// mcs serving until then.
func TestCutoverAndBack(t *testing.T) {
	r := newRehearsal(t)
	p := r.plan(t)
	if p.State != StateOpenShift || !slices.Equal(p.Args, openShiftArgs) || p.OperatorReplicas != 1 || p.OtherOverrides != 1 {
		t.Fatalf("plan: %+v", p)
	}
	var ops []patchOp
	if err := json.Unmarshal(p.Patch, &ops); err != nil || len(ops) != 2 || ops[0].Op != "test" || ops[1].Op != "add" || ops[1].Path != "/spec/overrides/-" {
		t.Fatalf("the patch %s: want a resourceVersion test and one entry appended", p.Patch)
	}
	stop := make(chan struct{})
	go rollOut(t, r.cp.Kube, StateMCS, stop)
	if err := r.co.Apply(r.ctx, p); err != nil {
		t.Fatal(err)
	}
	close(stop)
	r.checkApplied(t)

	// Plan again: mcs runs, the override is set, the Record says done;
	// apply again changes nothing and completes.
	again := r.plan(t)
	if again.State != StateMCS || again.Patch != nil || again.Record == nil || !again.Record.Done {
		t.Fatalf("plan after apply: %+v", again)
	}
	if err := r.co.Apply(r.ctx, again); err != nil {
		t.Errorf("apply twice: %v", err)
	}
	r.checkApplied(t)
	r.back(t)
}

// checkApplied checks what apply left: the admin's override kept and the
// operator's appended, the operator at zero, the DaemonSet mcs's with
// OpenShift's arguments, owned by the cutover's field manager, and
// deploy/openshift's ServiceAccount and RBAC in place.
func (r *rehearsal) checkApplied(t *testing.T) {
	t.Helper()
	got := r.overrides(t)
	if len(got) != 2 || !isOurs(got[1]) || got[0].(map[string]any)["name"] != monitoring["name"] {
		t.Errorf("overrides after apply: %v", got)
	}
	dep, err := r.cp.Kube.AppsV1().Deployments(Namespace).Get(r.ctx, Operator, metav1.GetOptions{})
	if err != nil || *dep.Spec.Replicas != 0 {
		t.Errorf("operator: %v %v", dep.Spec.Replicas, err)
	}
	ds := r.daemonSet(t)
	c := ds.Spec.Template.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{command}) || !slices.Equal(c.Args, openShiftArgs) || c.Image != "registry.example.com/mcs:v1" ||
		ds.Spec.Template.Spec.ServiceAccountName != "mcs-server" || ds.Annotations[annotationReplicas] != "1" || ds.Annotations[annotationOverride] != "true" {
		t.Errorf("DaemonSet after apply: %+v %q %q", c, ds.Spec.Template.Spec.ServiceAccountName, ds.Annotations)
	}
	if !slices.ContainsFunc(ds.ManagedFields, func(m metav1.ManagedFieldsEntry) bool {
		return m.Manager == fieldManager && m.Operation == metav1.ManagedFieldsOperationApply
	}) {
		t.Errorf("DaemonSet not applied server-side by %s: %v", fieldManager, ds.ManagedFields)
	}
	for _, o := range r.co.cfg.Manifests {
		res, err := r.co.resource(o)
		if o.GetKind() == "PrometheusRule" && err != nil {
			continue // the test API server serves no monitoring.coreos.com: skipped, with a warning
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := res.Get(r.ctx, o.GetName(), metav1.GetOptions{}); err != nil {
			t.Errorf("%s %s/%s after apply: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

// back runs mcs cutover back, playing the operator: once scaled up, it
// puts its own server back in the DaemonSet. Until then mcs serves.
func (r *rehearsal) back(t *testing.T) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.co.Back(r.ctx) }()
	kubetest.Eventually(t, 20*time.Second, "the operator scaled up", func() error {
		dep, err := r.cp.Kube.AppsV1().Deployments(Namespace).Get(r.ctx, Operator, metav1.GetOptions{})
		if err != nil || *dep.Spec.Replicas != 1 {
			return errors.New("not yet")
		}
		return nil
	})
	kubetest.Eventually(t, 20*time.Second, "the override removed", func() error {
		if len(r.overrides(t)) != 1 {
			return errors.New("not yet")
		}
		return nil
	})
	// The operator has not acted yet: mcs still serves, and its
	// ServiceAccount is still there.
	if s, _ := serverOf(&r.daemonSet(t).Spec.Template.Spec); s != StateMCS {
		t.Fatalf("before the operator put its server back, the DaemonSet runs %s", s)
	}
	if _, err := r.cp.Kube.CoreV1().ServiceAccounts(Namespace).Get(r.ctx, "mcs-server", metav1.GetOptions{}); err != nil {
		t.Fatalf("mcs's ServiceAccount deleted before the operator's server is back: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("back returned before the operator's server rolled out: %v", err)
	default:
	}
	stop := make(chan struct{})
	defer close(stop)
	go rollOut(t, r.cp.Kube, StateOpenShift, stop)
	ds := r.daemonSet(t)
	ds.Spec.Template.Spec = openShiftServer().Spec.Template.Spec
	if _, err := r.cp.Kube.AppsV1().DaemonSets(Namespace).Update(r.ctx, ds, metav1.UpdateOptions{FieldManager: "machine-config-operator"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := r.overrides(t); len(got) != 1 || got[0].(map[string]any)["name"] != monitoring["name"] {
		t.Errorf("overrides after back: %v", got)
	}
	if _, err := r.cp.Kube.CoreV1().ServiceAccounts(Namespace).Get(r.ctx, "mcs-server", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("mcs's ServiceAccount after back: %v", err)
	}
	if s, _ := serverOf(&r.daemonSet(t).Spec.Template.Spec); s != StateOpenShift {
		t.Errorf("after back the DaemonSet runs %s", s)
	}
}

// An override edited between plan and apply fails the patch (its
// resourceVersion test) instead of being lost, and nothing else changes.
func TestOverrideEditedMeanwhile(t *testing.T) {
	r := newRehearsal(t)
	p := r.plan(t)
	cv := r.clusterVersion(t)
	other := map[string]any{"kind": "Deployment", "group": "apps", "namespace": "openshift-ingress-operator", "name": "ingress-operator", "unmanaged": true}
	_ = unstructured.SetNestedSlice(cv.Object, []any{monitoring, other}, "spec", "overrides")
	if _, err := r.cp.Dynamic.Resource(clusterVersions).Update(r.ctx, cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.co.Apply(r.ctx, p); err == nil || !strings.Contains(err.Error(), "run again") {
		t.Fatalf("apply after an edit: %v", err)
	}
	if got := r.overrides(t); len(got) != 2 || isOurs(got[0]) || isOurs(got[1]) {
		t.Errorf("overrides: %v", got)
	}
	if dep, _ := r.cp.Kube.AppsV1().Deployments(Namespace).Get(r.ctx, Operator, metav1.GetOptions{}); *dep.Spec.Replicas != 1 {
		t.Error("the operator was scaled down after the patch failed")
	}
}

// What the cluster held before any cutover is not reported as changed:
// mcs's ServiceAccount left by an admin (or an earlier cutover gone back
// by hand) is there, but no apply began, so `cutover back` has nothing to
// undo and the report must not send the admin there.
func TestReportPresentBeforeIsNotChanged(t *testing.T) {
	r := newRehearsal(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "mcs-server", Namespace: Namespace}}
	if _, err := r.cp.Kube.CoreV1().ServiceAccounts(Namespace).Create(r.ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	changes, err := r.co.Report(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if c.Changed {
			t.Errorf("step %v reported changed before any apply: %s", c.Step, c.Detail)
		}
		if c.Step == StepRBAC && !strings.Contains(c.Detail, "ServiceAccount "+Namespace+"/mcs-server") {
			t.Errorf("RBAC detail %q does not name the ServiceAccount in place", c.Detail)
		}
	}
}

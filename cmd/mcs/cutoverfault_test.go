package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/testkit"
)

// faultCluster is a real kube-apiserver holding what the cutover touches
// (testdata/cutover-openshift.yaml) and three pods of OpenShift's server,
// reached through a proxy that can refuse a request or act before one:
// the faults. No kubelet and no controller run: the test plays the
// DaemonSet controller and the operator when a step waits for them.
type faultCluster struct {
	cp         *kubetest.ControlPlane
	rec        *kubetest.Recorder
	kubeconfig string
	openshift  corev1.PodSpec // the operator's server's pod template
	fault      atomic.Pointer[func(http.ResponseWriter, *http.Request) bool]
}

var clusterVersionsGVR = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}

func newFaultCluster(t *testing.T) *faultCluster {
	cp := kubetest.New(t, true)
	f := &faultCluster{cp: cp, rec: &kubetest.Recorder{}}
	f.rec.Intercept = func(w http.ResponseWriter, req *http.Request) bool {
		if h := f.fault.Load(); h != nil {
			return (*h)(w, req)
		}
		return false
	}
	f.kubeconfig = writeKubeconfig(t, f.rec.Proxy(t, cp.Admin))
	// openshift-image-registry is missing: the first fault.
	cp.Apply(t, kubetest.ToObject(t, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": mcoNS}}))
	cp.ApplyFiles(t, filepath.Join("testdata", "cutover-openshift.yaml"))
	cp.Apply(t, kubetest.ToObject(t, map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "machine-config-server", "namespace": mcoNS}}))
	// The ImageRegistry capability is off, so its namespace is missing.
	cvs := cp.Dynamic.Resource(clusterVersionsGVR)
	cv, err := cvs.Get(context.Background(), "version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cv.Object["status"] = map[string]any{"desired": map[string]any{"version": "4.21.0", "image": "quay.io/openshift-release-dev/ocp-release@sha256:0"},
		"observedGeneration": int64(1), "versionHash": "x", "availableUpdates": nil,
		"capabilities": map[string]any{"enabledCapabilities": []any{"MachineAPI", "marketplace"}, "knownCapabilities": []any{"ImageRegistry", "MachineAPI", "marketplace"}}}
	if _, err := cvs.UpdateStatus(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.openshift = f.daemonSet(t).Spec.Template.Spec
	f.replacePods(t, f.daemonSet(t), "")
	return f
}

// inject makes h see every request first until the next inject; nil
// lets them all through.
func (f *faultCluster) inject(h func(http.ResponseWriter, *http.Request) bool) {
	if h == nil {
		f.fault.Store(nil)
		return
	}
	f.fault.Store(&h)
}

func (f *faultCluster) daemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	ds, err := f.cp.Kube.AppsV1().DaemonSets(mcoNS).Get(context.Background(), "machine-config-server", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// replacePods plays the DaemonSet controller and the kubelets of three
// masters: ds's pods replaced by ones of its template, running and ready
// (waiting, not ready, when waiting names a reason), and its status
// rolled out unless a pod waits.
func (f *faultCluster) replacePods(t *testing.T, ds *appsv1.DaemonSet, waiting string) {
	ctx := context.Background()
	pods := f.cp.Kube.CoreV1().Pods(mcoNS)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{LabelSelector: "k8s-app=machine-config-server"}); err != nil {
		t.Error(err)
	}
	for i := range 3 {
		spec := *ds.Spec.Template.Spec.DeepCopy()
		spec.NodeName = fmt.Sprintf("master-%d", i)
		spec.AutomountServiceAccountToken = new(bool)
		spec.Volumes = nil
		spec.Containers[0].VolumeMounts = nil
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "machine-config-server-" + spec.NodeName, Labels: ds.Spec.Template.Labels}, Spec: spec}
		pod, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		st := corev1.ContainerStatus{Name: spec.Containers[0].Name, Image: spec.Containers[0].Image, Ready: waiting == "",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
		if waiting != "" {
			st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting, Message: "Back-off pulling image " + spec.Containers[0].Image}}
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{st}}
		if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}
	if waiting != "" {
		return
	}
	ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3,
		UpdatedNumberScheduled: 3, NumberAvailable: 3, NumberReady: 3}
	if _, err := f.cp.Kube.AppsV1().DaemonSets(mcoNS).UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
		t.Error(err)
	}
}

// play runs, until the returned stop, the DaemonSet controller (a new
// generation of the DaemonSet rolled out, its pods waiting on waiting if
// it names a reason) and, when operator, the operator, which once scaled
// up puts its own server back in the DaemonSet.
func (f *faultCluster) play(t *testing.T, operator bool, waiting string) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		seen := int64(-1)
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			ctx := context.Background()
			ds, err := f.cp.Kube.AppsV1().DaemonSets(mcoNS).Get(ctx, "machine-config-server", metav1.GetOptions{})
			if err != nil {
				continue
			}
			dep, err := f.cp.Kube.AppsV1().Deployments(mcoNS).Get(ctx, "machine-config-operator", metav1.GetOptions{})
			if operator && err == nil && *dep.Spec.Replicas > 0 && slices.Contains(ds.Spec.Template.Spec.Containers[0].Command, "/usr/bin/mcs") {
				ds.Spec.Template.Spec = *f.openshift.DeepCopy()
				_, _ = f.cp.Kube.AppsV1().DaemonSets(mcoNS).Update(ctx, ds, metav1.UpdateOptions{FieldManager: "machine-config-operator"})
				continue
			}
			if ds.Status.ObservedGeneration != ds.Generation && (waiting == "" || ds.Generation != seen) {
				seen = ds.Generation
				f.replacePods(t, ds, waiting)
			}
		}
	}()
	return func() { close(done); <-ended }
}

// state is what a cutover changes, as the cluster holds it.
func (f *faultCluster) state(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	c := f.daemonSet(t).Spec.Template.Spec
	dep, err := f.cp.Kube.AppsV1().Deployments(mcoNS).Get(ctx, "machine-config-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cv, err := f.cp.Dynamic.Resource(clusterVersionsGVR).Get(ctx, "version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, _, _ := unstructured.NestedSlice(cv.Object, "spec", "overrides")
	var overrides []string
	for _, o := range list {
		m := o.(map[string]any)
		overrides = append(overrides, fmt.Sprintf("%s=%v", m["name"], m["unmanaged"]))
	}
	exists := func(err error) bool { return err == nil }
	_, saErr := f.cp.Kube.CoreV1().ServiceAccounts(mcoNS).Get(ctx, "mcs-server", metav1.GetOptions{})
	_, crErr := f.cp.Kube.RbacV1().ClusterRoles().Get(ctx, "mcs-server", metav1.GetOptions{})
	_, rbErr := f.cp.Kube.RbacV1().RoleBindings("default").Get(ctx, "mcs-server-events", metav1.GetOptions{})
	_, cmErr := f.cp.Kube.CoreV1().ConfigMaps(mcoNS).Get(ctx, "mcs-cutover", metav1.GetOptions{})
	return fmt.Sprintf("daemonset: %v %s %s sa=%s\noperator replicas: %d\noverrides: %v\nmcs objects: sa=%v clusterrole=%v events-binding=%v record=%v\n",
		c.Containers[0].Command, c.Containers[0].Image, strings.Join(c.Containers[0].Args, " "), c.ServiceAccountName,
		*dep.Spec.Replicas, overrides, exists(saErr), exists(crErr), exists(rbErr), exists(cmErr))
}

// run runs mcs with args, the kubeconfig of the proxy added to a cutover
// command, and returns its stdout and error.
func (f *faultCluster) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if !slices.Contains(args, "--kubeconfig") {
		args = append(args, "--kubeconfig", f.kubeconfig)
	}
	in := startSubcommand(t, false, args...)
	err := <-in.done
	in.done <- err
	return in.stdout.String(), err
}

// apply is mcs cutover apply with the waits short: a rollout not
// complete within 300ms has timed out.
func (f *faultCluster) apply(t *testing.T, image string) (string, error) {
	return f.run(t, "cutover", "apply", "--image", image, "--preflight=false", "--timeout", "300ms", "--interval", "10ms")
}

// applyPlayed is mcs cutover apply while the test plays the DaemonSet
// controller: its waits end when it has acted, however loaded the
// machine.
func (f *faultCluster) applyPlayed(t *testing.T, image string) (string, error) {
	return f.run(t, "cutover", "apply", "--image", image, "--preflight=false", "--timeout", "1m", "--interval", "10ms")
}

// generations are the DaemonSet's, which depend on how many cutovers
// ran before.
var generations = regexp.MustCompile(`(generation|observed:) [0-9]+`)

// restoreLine is the command a failed apply says restores the cluster.
var restoreLine = regexp.MustCompile(`(?m)^restore it with: (mcs cutover back .*)$`)

// golden compares a failure's words with testdata/name, the kubeconfig's
// path and resourceVersions replaced.
func (f *faultCluster) golden(t *testing.T, name string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: apply did not fail", name)
	}
	got := regexp.MustCompile(`--kubeconfig \S+`).ReplaceAllString(err.Error(), "--kubeconfig KUBECONFIG") + "\n"
	got = regexp.MustCompile(`resourceVersion[^;\n]*?[0-9]{2,}`).ReplaceAllStringFunc(got, func(s string) string {
		return regexp.MustCompile(`[0-9]{2,}`).ReplaceAllString(s, "RV")
	})
	got = generations.ReplaceAllString(got, "$1 N")
	testkit.Golden(t, filepath.Join("testdata", "cutover-fault-"+name+".txt"), got, *update)
}

// A cutover rehearsal with a failure injected at each step, on a real
// kube-apiserver: each time apply stops, the cluster is unchanged (and
// apply says so) or the command apply prints restores it, exactly; and
// apply run again, the cause gone, resumes and completes, after which
// back restores the cluster again.
func TestCutoverFaults(t *testing.T) {
	f := newFaultCluster(t)
	original := f.state(t)
	const image = "registry.example.com/mcs:v1"

	// A namespace a manifest goes to is missing: found before any change.
	_, err := f.apply(t, image)
	f.golden(t, "namespace", err)
	if got := f.state(t); got != original {
		t.Fatalf("after a check failed:\n%s\nwant\n%s", got, original)
	}
	f.cp.Apply(t, kubetest.ToObject(t, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "openshift-image-registry"}}))

	// A right missing: a user whose roles grant all but patching the
	// ClusterVersion. Found before any change.
	_, err = f.run(t, "cutover", "apply", "--image", image, "--preflight=false", "--kubeconfig", f.limitedUser(t))
	f.golden(t, "forbidden", err)
	if got := f.state(t); got != original {
		t.Fatalf("after a check failed:\n%s\nwant\n%s", got, original)
	}

	type fault = func(http.ResponseWriter, *http.Request) bool
	for _, tc := range []struct {
		name  string
		fault func() fault // a new one for each apply; nil: none
	}{
		// The case: the namespace deleted after the check, the
		// ServiceAccount and ClusterRole applied before the Role.
		{"namespace-gone", func() fault {
			return refuse(http.MethodPatch, "/namespaces/openshift-image-registry/roles/mcs-server", http.StatusNotFound, metav1.StatusReasonNotFound,
				`namespaces "openshift-image-registry" not found`)
		}},
		// An admin edits the overrides between plan and apply: the
		// patch's resourceVersion test fails on the API server.
		{"override-conflict", f.editOverridesBefore},
		{"scale-conflict", func() fault {
			return refuse(http.MethodPut, "/deployments/machine-config-operator/scale", http.StatusConflict, metav1.StatusReasonConflict,
				`Operation cannot be fulfilled on deployments.apps "machine-config-operator": the object has been modified; please apply your changes to the latest version and try again`)
		}},
		{"daemonset-conflict", func() fault {
			return refuse(http.MethodPatch, "/daemonsets/machine-config-server", http.StatusConflict, metav1.StatusReasonConflict,
				`Apply failed with 1 conflict: conflict with "machine-config-operator": .spec.template.spec.containers[name="machine-config-server"].image`)
		}},
		// Nothing rolls the DaemonSet out: the wait times out.
		{"rollout-timeout", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newFault := func() fault {
				if tc.fault == nil {
					return nil
				}
				return tc.fault()
			}
			f.faultThenRestore(t, tc.name, newFault(), original, image)
			f.faultThenResume(t, newFault(), original, image)
		})
	}

	f.imagePull(t, original, image)
}

// imagePull: the image cannot be pulled, so the rollout stops at once,
// naming the pod; plan says what runs; apply run again with another
// image resumes and completes; back restores.
func (f *faultCluster) imagePull(t *testing.T, original, image string) {
	stop := f.play(t, false, "ImagePullBackOff")
	_, err := f.run(t, "cutover", "apply", "--image", "registry.example.com/mcs:typo", "--preflight=false", "--timeout", "1m", "--interval", "10ms")
	stop()
	f.golden(t, "image-pull", err)
	plan, err := f.run(t, "cutover", "plan")
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join("testdata", "cutover-fault-plan.txt"), generations.ReplaceAllString(plan, "$1 N"), *update)
	stop = f.play(t, true, "")
	defer stop()
	if out, err := f.applyPlayed(t, image); err != nil || !strings.Contains(out, "Resuming the cutover") {
		t.Fatalf("apply again with an image that pulls: %v\n%s", err, out)
	}
	if out, err := f.run(t, "cutover", "back", "--timeout", "1m", "--interval", "10ms"); err != nil {
		t.Fatalf("back: %v\n%s", err, out)
	}
	if got := f.state(t); got != original {
		t.Errorf("after back:\n%s\nwant\n%s", got, original)
	}
}

// faultThenRestore injects fault, runs apply, and runs the command its
// failure prints, with the test playing the operator.
func (f *faultCluster) faultThenRestore(t *testing.T, name string, fault func(http.ResponseWriter, *http.Request) bool, original, image string) {
	t.Helper()
	f.inject(fault)
	_, err := f.apply(t, image)
	f.inject(nil)
	f.golden(t, name, err)
	m := restoreLine.FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("no command to restore the cluster in:\n%v", err)
	}
	stop := f.play(t, true, "")
	defer stop()
	if out, err := f.run(t, strings.Fields(m[1])[1:]...); err != nil {
		t.Fatalf("%s: %v\n%s", m[1], err, out)
	}
	if got := f.state(t); got != f.expected(original) {
		t.Errorf("after %s:\n%s\nwant\n%s", m[1], got, f.expected(original))
	}
	f.resetOverrides(t)
}

// faultThenResume injects fault, runs apply, then apply again without
// it, which completes; then back.
func (f *faultCluster) faultThenResume(t *testing.T, fault func(http.ResponseWriter, *http.Request) bool, original, image string) {
	t.Helper()
	f.inject(fault)
	if _, err := f.apply(t, image); err == nil {
		t.Fatal("apply with the fault did not fail")
	}
	f.inject(nil)
	stop := f.play(t, true, "")
	defer stop()
	out, err := f.applyPlayed(t, image)
	if err != nil || !strings.Contains(out, "Resuming the cutover") {
		t.Fatalf("apply again: %v\n%s", err, out)
	}
	ds := f.daemonSet(t)
	if c := ds.Spec.Template.Spec.Containers[0]; c.Command[0] != "/usr/bin/mcs" || c.Image != image || ds.Status.NumberAvailable != 3 {
		t.Errorf("after apply again the DaemonSet runs %v %s, %d available", c.Command, c.Image, ds.Status.NumberAvailable)
	}
	if out, err := f.run(t, "cutover", "back", "--timeout", "1m", "--interval", "10ms"); err != nil {
		t.Fatalf("back: %v\n%s", err, out)
	}
	if got := f.state(t); got != f.expected(original) {
		t.Errorf("after back:\n%s\nwant\n%s", got, f.expected(original))
	}
	f.resetOverrides(t)
}

// refuse is a fault: the first request of method on a path ending in
// suffix answered with code, reason and message; the others let through.
func refuse(method, suffix string, code int, reason metav1.StatusReason, message string) func(http.ResponseWriter, *http.Request) bool {
	var once atomic.Bool
	return func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method != method || !strings.HasSuffix(req.URL.Path, suffix) || !once.CompareAndSwap(false, true) {
			return false
		}
		kubetest.Refuse(w, code, reason, message)
		return true
	}
}

// adminOverride is what editOverridesBefore adds.
var adminOverride = map[string]any{"kind": "Deployment", "group": "apps", "namespace": "openshift-ingress-operator", "name": "ingress-operator", "unmanaged": true}

// editOverridesBefore is a fault: before the first patch of the
// ClusterVersion reaches the API server, an admin adds an override of
// their own.
func (f *faultCluster) editOverridesBefore() func(http.ResponseWriter, *http.Request) bool {
	var once atomic.Bool
	return func(_ http.ResponseWriter, req *http.Request) bool {
		if req.Method != http.MethodPatch || !strings.HasSuffix(req.URL.Path, "/clusterversions/version") || !once.CompareAndSwap(false, true) {
			return false
		}
		ctx := context.Background()
		cv, err := f.cp.Dynamic.Resource(clusterVersionsGVR).Get(ctx, "version", metav1.GetOptions{})
		if err == nil {
			list, _, _ := unstructured.NestedSlice(cv.Object, "spec", "overrides")
			_ = unstructured.SetNestedSlice(cv.Object, append(list, adminOverride), "spec", "overrides")
			_, _ = f.cp.Dynamic.Resource(clusterVersionsGVR).Update(ctx, cv, metav1.UpdateOptions{})
		}
		return false
	}
}

// expected is original with an admin's override added meanwhile, if one
// was: the cutover keeps it.
func (f *faultCluster) expected(original string) string {
	cv, err := f.cp.Dynamic.Resource(clusterVersionsGVR).Get(context.Background(), "version", metav1.GetOptions{})
	if err != nil {
		return original
	}
	list, _, _ := unstructured.NestedSlice(cv.Object, "spec", "overrides")
	for _, o := range list {
		if o.(map[string]any)["name"] == adminOverride["name"] {
			return strings.Replace(original, "cluster-monitoring-operator=true]", "cluster-monitoring-operator=true ingress-operator=true]", 1)
		}
	}
	return original
}

// resetOverrides removes the admin's override editOverridesBefore added.
func (f *faultCluster) resetOverrides(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	cv, err := f.cp.Dynamic.Resource(clusterVersionsGVR).Get(ctx, "version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, _, _ := unstructured.NestedSlice(cv.Object, "spec", "overrides")
	kept := slices.DeleteFunc(list, func(o any) bool { return o.(map[string]any)["name"] == adminOverride["name"] })
	_ = unstructured.SetNestedSlice(cv.Object, kept, "spec", "overrides")
	if _, err := f.cp.Dynamic.Resource(clusterVersionsGVR).Update(ctx, cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// limitedUser is a kubeconfig of a user who may do all the cutover does
// but patch the ClusterVersion: not in system:masters, bound to a
// ClusterRole of the API groups the cutover uses, clusterversions read-only.
func (f *faultCluster) limitedUser(t *testing.T) string {
	t.Helper()
	u, err := f.cp.Env.ControlPlane.AddUser(envtest.User{Name: "cutover-limited"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	f.cp.Apply(t, kubetest.ToObject(t, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "cutover-limited"},
		"rules": []any{
			map[string]any{"apiGroups": []any{"", "apps", "rbac.authorization.k8s.io", "monitoring.coreos.com"}, "resources": []any{"*"}, "verbs": []any{"*"}},
			map[string]any{"apiGroups": []any{"config.openshift.io"}, "resources": []any{"clusterversions"}, "verbs": []any{"get", "list", "watch"}},
		}}))
	f.cp.Apply(t, kubetest.ToObject(t, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "cutover-limited"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cutover-limited"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "cutover-limited"}}}))
	return path
}

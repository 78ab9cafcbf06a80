package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ignition-mcs/mcs/admit/stored"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/promrules"
	"github.com/ignition-mcs/mcs/source/kube"
)

var admitDeployDir = filepath.Join("..", "..", "deploy", "openshift", "admit")

// admitObjects are the objects of every file kustomization.yaml lists,
// keyed Kind/name; every YAML file of the directory must be listed.
func admitObjects(t *testing.T) (map[string]*unstructured.Unstructured, []*unstructured.Unstructured) {
	t.Helper()
	kust, err := os.ReadFile(filepath.Join(admitDeployDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	k := kubetest.DecodeObjects(t, kust)[0]
	files, _, _ := unstructured.NestedStringSlice(k.Object, "resources")
	all, _ := filepath.Glob(filepath.Join(admitDeployDir, "*.yaml"))
	for _, f := range all {
		if b := filepath.Base(f); b != "kustomization.yaml" && !slices.Contains(files, b) {
			t.Errorf("%s is not in kustomization.yaml", b)
		}
	}
	byKey := map[string]*unstructured.Unstructured{}
	var list []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(admitDeployDir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range kubetest.DecodeObjects(t, data) {
			key := u.GetKind() + "/" + u.GetName()
			if _, dup := byKey[key]; dup && u.GetKind() != "Role" && u.GetKind() != "RoleBinding" {
				t.Errorf("%s twice", key)
			}
			byKey[key] = u
			list = append(list, u)
		}
	}
	return byKey, list
}

func typed[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	if u == nil {
		t.Fatalf("no %T", *new(T))
	}
	var v T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &v); err != nil {
		t.Fatalf("%s/%s: %v", u.GetKind(), u.GetName(), err)
	}
	return &v
}

// deploy/openshift/admit applies, server-side, to a real API server (the
// Prometheus Operator's kinds are not served there: their namespace and
// selectors are checked here, their rules by promtool), and holds what
// the webhook needs: two replicas kept through drains on the
// control-plane nodes, system-cluster-critical; the service CA's serving
// certificate mounted; MachineConfig creates and updates only, failing
// open within 5 s with no side effects; its namespace scraped by the
// platform Prometheus.
func TestAdmitManifests(t *testing.T) {
	objs, list := admitObjects(t)
	cp := kubetest.New(t, false)
	ctx := context.Background()
	for _, u := range list {
		if u.GroupVersionKind().Group == "monitoring.coreos.com" {
			if u.GetNamespace() != "openshift-mcs-admit" {
				t.Errorf("%s/%s in %q", u.GetKind(), u.GetName(), u.GetNamespace())
			}
			continue
		}
		res, _ := cp.Resource(t, u)
		if _, err := res.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "mcs-test"}); err != nil {
			t.Fatalf("server-side apply of %s/%s: %v", u.GetKind(), u.GetName(), err)
		}
	}

	ns := objs["Namespace/openshift-mcs-admit"]
	if ns == nil || ns.GetLabels()["openshift.io/cluster-monitoring"] != "true" {
		t.Error("no Namespace openshift-mcs-admit labelled openshift.io/cluster-monitoring")
	}
	d := typed[appsv1.Deployment](t, objs["Deployment/mcs-admit"])
	pod := d.Spec.Template.Spec
	checkAdmitPod(t, d)
	pdb := typed[policyv1.PodDisruptionBudget](t, objs["PodDisruptionBudget/mcs-admit"])
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || kubetest.YAML(pdb.Spec.Selector.MatchLabels) != kubetest.YAML(d.Spec.Template.Labels) {
		t.Errorf("PDB %+v", pdb.Spec)
	}
	svc := typed[corev1.Service](t, objs["Service/mcs-admit"])
	secret := svc.Annotations["service.beta.openshift.io/serving-cert-secret-name"]
	if secret == "" || !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == secret }) {
		t.Errorf("the Service's serving certificate %q is not mounted", secret)
	}
	if kubetest.YAML(svc.Spec.Selector) != kubetest.YAML(d.Spec.Template.Labels) || len(svc.Spec.Ports) != 1 ||
		svc.Spec.Ports[0].TargetPort.StrVal != pod.Containers[0].Ports[0].Name {
		t.Errorf("the Service does not reach the pods: %+v", svc.Spec)
	}
	checkAdmitWebhook(t, typed[admissionv1.MutatingWebhookConfiguration](t, objs["MutatingWebhookConfiguration/mcs-admit"]), svc)
	sm := objs["ServiceMonitor/mcs-admit"]
	if sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels"); kubetest.YAML(sel) != kubetest.YAML(svc.Labels) {
		t.Errorf("the ServiceMonitor selects %v, the Service is labelled %v", sel, svc.Labels)
	}
	checkAdmitToken(t, objs, pod, sm)
}

func checkAdmitPod(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	pod := d.Spec.Template.Spec
	if len(pod.Containers) == 0 || len(pod.Containers[0].Args) == 0 {
		t.Fatal("no container arguments")
	}
	if o, err := parseAdmitFlags(pod.Containers[0].Args[1:], io.Discard); err != nil || o == nil {
		t.Errorf("the Deployment's arguments %q: %v", pod.Containers[0].Args, err)
	} else if want := fmt.Sprintf(":%d", pod.Containers[0].Ports[0].ContainerPort); o.listen != want {
		t.Errorf("--listen %s, the container port %s", o.listen, want)
	}
	tolerates := func(key string) bool {
		return slices.ContainsFunc(pod.Tolerations, func(tl corev1.Toleration) bool {
			return tl.Key == key && tl.Operator == corev1.TolerationOpExists && tl.Effect == corev1.TaintEffectNoSchedule
		})
	}
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"two replicas", d.Spec.Replicas != nil && *d.Spec.Replicas == 2},
		{"the control-plane nodes", kubetest.YAML(pod.NodeSelector) == `node-role.kubernetes.io/master: ""`},
		{"their taints tolerated", tolerates("node-role.kubernetes.io/master") && tolerates("node-role.kubernetes.io/control-plane")},
		{"system-cluster-critical", pod.PriorityClassName == "system-cluster-critical"},
		{"its ServiceAccount", pod.ServiceAccountName == "mcs-admit"},
		{"one container, mcs admit", len(pod.Containers) == 1 && len(pod.Containers[0].Args) > 0 && pod.Containers[0].Args[0] == "admit"},
		{"probes", pod.Containers[0].ReadinessProbe != nil && pod.Containers[0].LivenessProbe != nil},
	} {
		if !c.ok {
			t.Errorf("the Deployment lacks %s", c.what)
		}
	}
}

func checkAdmitWebhook(t *testing.T, mw *admissionv1.MutatingWebhookConfiguration, svc *corev1.Service) {
	t.Helper()
	if mw.Annotations["service.beta.openshift.io/inject-cabundle"] != "true" {
		t.Error("no service CA caBundle injection")
	}
	if len(mw.Webhooks) != 1 {
		t.Fatalf("%d webhooks", len(mw.Webhooks))
	}
	w := mw.Webhooks[0]
	rules := []admissionv1.RuleWithOperations{{
		Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
		Rule: admissionv1.Rule{APIGroups: []string{"machineconfiguration.openshift.io"}, APIVersions: []string{"v1"},
			Resources: []string{"machineconfigs"}, Scope: ptr(admissionv1.ClusterScope)},
	}}
	if kubetest.YAML(w.Rules) != kubetest.YAML(rules) {
		t.Errorf("rules\n%s\nwant\n%s", kubetest.YAML(w.Rules), kubetest.YAML(rules))
	}
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"failurePolicy Ignore", w.FailurePolicy != nil && *w.FailurePolicy == admissionv1.Ignore},
		{"timeoutSeconds at most 5", w.TimeoutSeconds != nil && *w.TimeoutSeconds <= 5},
		{"sideEffects None (a review changes nothing but its answer)", w.SideEffects != nil && *w.SideEffects == admissionv1.SideEffectClassNone},
		{"AdmissionReview v1", slices.Equal(w.AdmissionReviewVersions, []string{"v1"})},
		{"the Service", w.ClientConfig.Service != nil && w.ClientConfig.Service.Name == svc.Name && w.ClientConfig.Service.Namespace == svc.Namespace &&
			w.ClientConfig.Service.Port != nil && *w.ClientConfig.Service.Port == svc.Spec.Ports[0].Port},
		{"no caBundle of its own", len(w.ClientConfig.CABundle) == 0 && w.ClientConfig.URL == nil},
	} {
		if !c.ok {
			t.Errorf("the webhook lacks %s", c.what)
		}
	}
	if p := w.ClientConfig.Service.Path; p == nil || !strings.HasPrefix(*p, "/") {
		t.Errorf("webhook path %v", p)
	}
}

func ptr[T any](v T) *T { return &v }

// deployedAdmitArgs are the Deployment's arguments to mcs admit but its
// address, certificate and token file (startAdmit's, and a file of the
// token returned, which the token controller would write into the
// Secret), with kubeconfig.
func deployedAdmitArgs(t *testing.T, d *appsv1.Deployment, kubeconfig string) ([]string, string) {
	t.Helper()
	const token = "Zq3mH8vK2pLw9xN4tR7yB1cF6dJ0sG5e"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	args := []string{"--kubeconfig", kubeconfig, "--auth-token-file", tokenFile}
	for _, a := range d.Spec.Template.Spec.Containers[0].Args[1:] {
		if !strings.HasPrefix(a, "--listen=") && !strings.HasPrefix(a, "--cert=") && !strings.HasPrefix(a, "--key=") && !strings.HasPrefix(a, "--auth-token-file=") {
			args = append(args, a)
		}
	}
	return args, token
}

// withToken is c sending a bearer token with each request.
func withToken(c *http.Client, token string) *http.Client {
	next := c.Transport
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token)
		return next.RoundTrip(r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// clusterVersionCRD is OpenShift's ClusterVersion CRD, from the
// openshift/api module go.mod pins.
func clusterVersionCRD(t *testing.T) string {
	t.Helper()
	files, err := kubetest.CRDFiles(false)
	if err != nil {
		t.Fatal(err)
	}
	// .../machineconfiguration/v1/zz_generated.crd-manifests/x.yaml -> the module
	api := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(files[0]))))
	return filepath.Join(api, "config", "v1", "zz_generated.crd-manifests", "0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml")
}

// mcs admit as deployed: under exactly the ServiceAccount and roles of
// deploy/openshift/admit, with the Deployment's arguments but the
// addresses, against a real kube-apiserver with a ClusterVersion whose
// history sets the ceiling at 3.4. Every request it makes is recorded:
// the roles grant exactly those (a grant it never uses, or a call not
// granted, fails), after it has watched the stored MachineConfigs,
// reviewed an OpenShift controller's write above the ceiling (an Event)
// and been scraped. The scrape has every metric the PrometheusRule reads.
func TestAdmitDeployed(t *testing.T) {
	objs, list := admitObjects(t)
	cp := kubetest.New(t, false, func(env *envtest.Environment) {
		env.CRDInstallOptions.Paths = append(env.CRDInstallOptions.Paths, clusterVersionCRD(t))
	})
	sa := cp.ServiceAccount(t, "openshift-mcs-admit", "mcs-admit", admitDeployDir, "namespace.yaml", "rbac.yaml")
	cp.Apply(t, kubetest.DecodeObjects(t, []byte(lowerExistingCluster+`---
apiVersion: config.openshift.io/v1
kind: ClusterVersion
metadata: {name: version}
spec: {clusterID: 5f0c7d2e-0000-4000-8000-000000000001}
status:
  desired: {version: 4.19.3, image: "quay.io/openshift-release-dev/ocp-release@sha256:1"}
  observedGeneration: 1
  versionHash: x
  availableUpdates: null
  history:
  - {state: Completed, version: 4.19.3, image: "quay.io/openshift-release-dev/ocp-release@sha256:1", verified: false, startedTime: "2026-11-02T00:00:00Z", completionTime: "2026-11-02T01:00:00Z"}
  - {state: Completed, version: 4.18.7, image: "quay.io/openshift-release-dev/ocp-release@sha256:2", verified: false, startedTime: "2026-10-01T00:00:00Z", completionTime: "2026-10-01T01:00:00Z"}
`))...)
	var rec kubetest.Recorder
	kc := writeKubeconfig(t, rec.Proxy(t, sa))
	d := typed[appsv1.Deployment](t, objs["Deployment/mcs-admit"])
	args, token := deployedAdmitArgs(t, d, kc)
	addr, c, _ := startAdmit(t, args...)
	if code, _ := admitGet(t, c, addr, "/status"); code != http.StatusUnauthorized {
		t.Errorf("/status without the token: %d, want 401", code)
	}
	c = withToken(c, token)

	// The watch, against the rollback release's 3.4: 50-files, 50-kargs
	// and 50-cex, all of pool worker.
	var st struct {
		Stored *stored.Report `json:"stored"`
	}
	kubetest.Eventually(t, time.Minute, "the stored MachineConfigs in /status", func() error {
		if code, body := admitGet(t, c, addr, "/status"); code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil {
			return fmt.Errorf("/status: %d %s", code, body)
		}
		if st.Stored == nil || st.Stored.Pools["worker"] != 3 || st.Stored.Ceiling != convert.V3_4 {
			return fmt.Errorf("stored %+v", st.Stored)
		}
		return nil
	})
	// A review claiming the machine-config-controller's write above the
	// ceiling is warned, and makes no Event: anyone can send one. The
	// controller's own writes, stored (its field manager on spec.config),
	// make one Event, its count patched at the second. Only
	// MachineConfigs' Events count: the API server records its own in
	// default (a slow start's ClusterIP repair).
	reviewAboveCeiling(t, c, addr)
	writeAboveCeiling(t, cp, "")
	writeAboveCeiling(t, cp, `, files: [{path: /etc/second-write}]`)
	kubetest.Eventually(t, time.Minute, "an Event for OpenShift's write above the ceiling, counted twice", func() error {
		l, err := cp.Kube.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.kind=MachineConfig"})
		if err != nil || len(l.Items) != 1 || l.Items[0].Count != 2 {
			return fmt.Errorf("events %+v, %v", l, err)
		}
		return nil
	})
	code, scrape := admitGet(t, c, addr, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	exposed, err := promrules.Exposed(strings.NewReader(scrape))
	if err != nil {
		t.Fatal(err)
	}
	for _, miss := range promrules.Unexposed(promrules.Load(t, admitRulesManifest), exposed) {
		t.Error(miss)
	}
	kubetest.ExactlyGranted(t, kubetest.Granted(t, list, "openshift-mcs-admit", "mcs-admit"), rec.Calls())
}

// writeAboveCeiling stores, as the machine-config-controller does, a
// MachineConfig that needs 3.5 (storage holds more, when given).
func writeAboveCeiling(t *testing.T, cp *kubetest.ControlPlane, more string) {
	t.Helper()
	u := kubetest.Object(t, `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 99-worker-cex}
spec: {config: {ignition: {version: 3.5.0}, storage: {luks: [{name: root, device: /dev/sda, cex: {enabled: true}}]`+more+`}}}
`)
	res := cp.Dynamic.Resource(kube.MachineConfigs)
	ctx := context.Background()
	if cur, err := res.Get(ctx, u.GetName(), metav1.GetOptions{}); err == nil {
		u.SetResourceVersion(cur.GetResourceVersion())
		_, err = res.Update(ctx, u, metav1.UpdateOptions{FieldManager: "machine-config-controller"})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := res.Create(ctx, u, metav1.CreateOptions{FieldManager: "machine-config-controller"}); err != nil {
		t.Fatal(err)
	}
}

// reviewAboveCeiling sends the webhook, as the API server would, the
// machine-config-controller's create of a MachineConfig that needs 3.5.
func reviewAboveCeiling(t *testing.T, c *http.Client, addr string) {
	t.Helper()
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"5f0c7d2e-0000-4000-8000-0000000000aa",
"kind":{"group":"machineconfiguration.openshift.io","version":"v1","kind":"MachineConfig"},
"resource":{"group":"machineconfiguration.openshift.io","version":"v1","resource":"machineconfigs"},
"operation":"CREATE","userInfo":{"username":"system:serviceaccount:openshift-machine-config-operator:machine-config-controller"},
"object":{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-worker-cex"},
"spec":{"config":{"ignition":{"version":"3.5.0"},"storage":{"luks":[{"name":"root","device":"/dev/sda","cex":{"enabled":true}}]}}}}}}`
	resp, err := c.Post("https://"+addr+"/mutate", "application/json", strings.NewReader(review))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"allowed":true`) || !strings.Contains(string(b), "warnings") {
		t.Fatalf("review: %s %s", resp.Status, b)
	}
}

// checkAdmitToken: /status and /metrics are closed by --auth-token-file,
// a key of a Secret the pod mounts, which the ServiceMonitor presents: the
// token of a ServiceAccount the token controller fills in.
func checkAdmitToken(t *testing.T, objs map[string]*unstructured.Unstructured, pod corev1.PodSpec, sm *unstructured.Unstructured) {
	t.Helper()
	o, err := parseAdmitFlags(pod.Containers[0].Args[1:], io.Discard)
	if err != nil || o.tokenFile == "" {
		t.Fatalf("no --auth-token-file in %q (%v)", pod.Containers[0].Args, err)
	}
	dir, key := filepath.Dir(o.tokenFile), filepath.Base(o.tokenFile)
	var secret string
	for _, m := range pod.Containers[0].VolumeMounts {
		if m.MountPath == dir {
			for _, v := range pod.Volumes {
				if v.Name == m.Name && v.Secret != nil && v.Secret.DefaultMode != nil && *v.Secret.DefaultMode&0o077 == 0 {
					secret = v.Secret.SecretName
				}
			}
		}
	}
	if secret == "" {
		t.Errorf("--auth-token-file %s is not in a Secret mounted with defaultMode 0400", o.tokenFile)
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("%d ServiceMonitor endpoints", len(eps))
	}
	ep, _ := eps[0].(map[string]any)
	name, _, _ := unstructured.NestedString(ep, "bearerTokenSecret", "name")
	k, _, _ := unstructured.NestedString(ep, "bearerTokenSecret", "key")
	if name != secret || k != key {
		t.Errorf("the ServiceMonitor presents %s/%s, mcs admit reads %s/%s", name, k, secret, key)
	}
	s := objs["Secret/"+secret]
	if s == nil || s.Object["type"] != "kubernetes.io/service-account-token" || objs["ServiceAccount/"+s.GetAnnotations()["kubernetes.io/service-account.name"]] == nil {
		t.Errorf("Secret %s: not a token the token controller fills in for a ServiceAccount of the manifests", secret)
	}
}

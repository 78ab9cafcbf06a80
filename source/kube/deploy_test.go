package kube

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var deployDir = filepath.Join("..", "..", "deploy")

// deployObjects reads every manifest of deploy/, keyed "Kind/name".
func deployObjects(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(deployDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", deployDir, err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range decodeObjects(t, data) {
			if u.GetAPIVersion() == "" || u.GetKind() == "" {
				t.Errorf("%s: an object without apiVersion or kind", f)
			}
			if u.GetKind() != "Kustomization" && u.GetName() == "" {
				t.Errorf("%s: %s without a name", f, u.GetKind())
			}
			key := u.GetKind() + "/" + u.GetName()
			if _, dup := out[key]; dup {
				t.Errorf("%s: %s defined twice", f, key)
			}
			out[key] = u
		}
	}
	return out
}

func str(t *testing.T, u *unstructured.Unstructured, path ...string) string {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if !ok || err != nil {
		t.Fatalf("%s/%s: no $.%s", u.GetKind(), u.GetName(), strings.Join(path, "."))
	}
	if x, ok := v.(string); ok {
		return x
	}
	return yamlString(v)
}

var yamlString = kubetest.YAML

// The ClusterRole grants get, list and watch on exactly what the source
// reads, and the Role in the default namespace create and patch on Events,
// as the recorder writes them: the integration tests run the source and its
// Events under them (TestDeployRBACIsEnough, TestEventsOnPools), so any rule
// mcs needs is there, and this test keeps anything more out.
func TestDeployRBACIsMinimal(t *testing.T) {
	objs := deployObjects(t)
	role := objs["ClusterRole/mcs-reader"]
	if role == nil {
		t.Fatal("no ClusterRole mcs-reader")
	}
	got := kubetest.Rules(t, role)
	resources := []string{MachineConfigs.Resource, MachineConfigPools.Resource, ControllerConfigs.Resource, OSImageStreams.Resource}
	slices.Sort(resources)
	read := []string{"get", "list", "watch"}
	want := []kubetest.Rule{
		{Groups: []string{Group}, Resources: resources, Verbs: read},
		{Groups: []string{MachineConfigurations.Group}, Resources: []string{MachineConfigurations.Resource}, Verbs: read, Names: []string{clusterMachineConfiguration}},
	}
	if yamlString(got) != yamlString(want) {
		t.Errorf("rules\n%s\nwant\n%s", yamlString(got), yamlString(want))
	}
	events := objs["Role/mcs-events"]
	if events == nil {
		t.Fatal("no Role mcs-events")
	}
	if events.GetNamespace() != metav1.NamespaceDefault {
		t.Errorf("Role mcs-events in namespace %q: a MachineConfigPool's Events are in %q", events.GetNamespace(), metav1.NamespaceDefault)
	}
	wantEvents := []kubetest.Rule{{Groups: []string{Events.Group}, Resources: []string{Events.Resource}, Verbs: []string{"create", "patch"}}}
	if got := kubetest.Rules(t, events); yamlString(got) != yamlString(wantEvents) {
		t.Errorf("Role mcs-events rules\n%s\nwant\n%s", yamlString(got), yamlString(wantEvents))
	}
	checkBinding(t, objs, "RoleBinding/mcs-events", events)

	checkBinding(t, objs, "ClusterRoleBinding/mcs-reader", role)
}

// checkBinding checks that the binding named binds role to deploy/'s
// ServiceAccount and nothing else.
func checkBinding(t *testing.T, objs map[string]*unstructured.Unstructured, name string, role *unstructured.Unstructured) {
	t.Helper()
	binding := objs[name]
	sa := objs["ServiceAccount/mcs"]
	if binding == nil || sa == nil {
		t.Fatalf("no %s or ServiceAccount mcs", name)
	}
	if binding.GetNamespace() != role.GetNamespace() {
		t.Errorf("%s in namespace %q, its role in %q", name, binding.GetNamespace(), role.GetNamespace())
	}
	if str(t, binding, "roleRef", "name") != role.GetName() || str(t, binding, "roleRef", "kind") != role.GetKind() {
		t.Errorf("binding refers to %s", yamlString(binding.Object["roleRef"]))
	}
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	if len(subjects) != 1 || yamlString(subjects[0]) != yamlString(map[string]any{"kind": "ServiceAccount", "name": sa.GetName(), "namespace": sa.GetNamespace()}) {
		t.Errorf("subjects %s", yamlString(subjects))
	}
}

func TestDeployManifests(t *testing.T) {
	objs := deployObjects(t)
	labels, ports := checkDeployment(t, objs)
	checkService(t, objs["Service/mcs"], labels, ports)
	checkPodMonitor(t, objs["PodMonitor/mcs"], labels, ports)
	checkNamespaces(t, objs)
}

// checkDeployment checks the Deployment and returns its pods' labels and
// its container's ports by name.
func checkDeployment(t *testing.T, objs map[string]*unstructured.Unstructured) (labels string, ports map[string]string) {
	t.Helper()
	dep := objs["Deployment/mcs"]
	if dep == nil {
		t.Fatal("no Deployment mcs")
	}
	if got := str(t, dep, "spec", "replicas"); got != "2" {
		t.Errorf("replicas %s", got)
	}
	if str(t, dep, "spec", "template", "spec", "serviceAccountName") != objs["ServiceAccount/mcs"].GetName() {
		t.Error("the Deployment does not run as the ServiceAccount")
	}
	labels = yamlString(dep.Object["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"])
	if got := yamlString(dep.Object["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["labels"]); got != labels {
		t.Errorf("pod labels %s do not match the selector %s", got, labels)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("%d containers", len(containers))
	}
	c := &unstructured.Unstructured{Object: containers[0].(map[string]any)}
	ports = map[string]string{}
	list, _, _ := unstructured.NestedSlice(c.Object, "ports")
	for _, p := range list {
		m := p.(map[string]any)
		ports[m["name"].(string)] = yamlString(m["containerPort"])
	}
	if ports["https"] != "22623" || ports["http"] != "22624" {
		t.Errorf("container ports %v", ports)
	}
	for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		if got := str(t, c, probe, "httpGet", "path"); got != path {
			t.Errorf("%s on %s", probe, got)
		}
		if port := str(t, c, probe, "httpGet", "port"); ports[port] == "" {
			t.Errorf("%s on port %s, which the container does not name", probe, port)
		}
	}
	args := yamlString(c.Object["args"])
	for _, want := range []string{"--source=kube", "--render-mode=self", "--listen-tls=:22623", "--listen-plain=:22624"} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %s: %s", want, args)
		}
	}
	return labels, ports
}

func checkService(t *testing.T, svc *unstructured.Unstructured, labels string, ports map[string]string) {
	t.Helper()
	if svc == nil {
		t.Fatal("no Service mcs")
	}
	if got := yamlString(svc.Object["spec"].(map[string]any)["selector"]); got != labels {
		t.Errorf("Service selects %s, pods are %s", got, labels)
	}
	sports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	seen := map[string]bool{}
	for _, p := range sports {
		m := p.(map[string]any)
		port, target := yamlString(m["port"]), m["targetPort"].(string)
		if ports[target] != port {
			t.Errorf("Service port %s targets %s (container port %s)", port, target, ports[target])
		}
		seen[port] = true
	}
	if !seen["22623"] || !seen["22624"] {
		t.Errorf("Service ports %v", seen)
	}
}

func checkPodMonitor(t *testing.T, pm *unstructured.Unstructured, labels string, ports map[string]string) {
	t.Helper()
	if pm == nil {
		t.Fatal("no PodMonitor mcs")
	}
	if got := yamlString(pm.Object["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"]); got != labels {
		t.Errorf("PodMonitor selects %s", got)
	}
	eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(eps) != 1 || ports[eps[0].(map[string]any)["port"].(string)] == "" || eps[0].(map[string]any)["path"] != "/metrics" {
		t.Errorf("PodMonitor endpoints %s", yamlString(eps))
	}
}

// checkNamespaces checks that every namespaced object is in the one
// namespace, and that kustomize applies every manifest.
func checkNamespaces(t *testing.T, objs map[string]*unstructured.Unstructured) {
	t.Helper()
	ns := objs["Namespace/mcs"]
	if ns == nil {
		t.Fatal("no Namespace mcs")
	}
	for key, u := range objs {
		switch {
		case u.GetKind() == "Namespace", u.GetKind() == "ClusterRole", u.GetKind() == "ClusterRoleBinding", u.GetKind() == "Kustomization":
			continue
		case key == "Role/mcs-events" || key == "RoleBinding/mcs-events":
			continue // where the pools' Events are (TestDeployRBACIsMinimal)
		}
		if u.GetNamespace() != ns.GetName() {
			t.Errorf("%s in namespace %q", key, u.GetNamespace())
		}
	}
	kust := objs["Kustomization/"]
	if kust == nil {
		t.Fatal("no kustomization.yaml")
	}
	res, _, _ := unstructured.NestedStringSlice(kust.Object, "resources")
	files, _ := filepath.Glob(filepath.Join(deployDir, "*.yaml"))
	var names []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			names = append(names, b)
		}
	}
	slices.Sort(res)
	if strings.Join(res, " ") != strings.Join(names, " ") {
		t.Errorf("kustomization resources %v, files %v", res, names)
	}
}

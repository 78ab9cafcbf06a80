package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/source/kube"
)

func deployObjects(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "deploy", "controller", "controller.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, u := range kubetest.DecodeObjects(t, data) {
		out[u.GetKind()+"/"+u.GetName()] = u
	}
	return out
}

func yamlString(v any) string {
	b, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(b))
}

type rule struct{ Groups, Resources, Verbs, Names []string }

func rules(t *testing.T, u *unstructured.Unstructured) []rule {
	t.Helper()
	if u == nil {
		t.Fatal("no such object")
	}
	list, _, _ := unstructured.NestedSlice(u.Object, "rules")
	var out []rule
	for _, r := range list {
		m := r.(map[string]any)
		for k := range m {
			if k != "apiGroups" && k != "resources" && k != "verbs" && k != "resourceNames" {
				t.Errorf("%s: a rule has %s", u.GetName(), k)
			}
		}
		get := func(k string) []string {
			var s []string
			l, _ := m[k].([]any)
			for _, v := range l {
				s = append(s, v.(string))
			}
			slices.Sort(s)
			return s
		}
		out = append(out, rule{get("apiGroups"), get("resources"), get("verbs"), get("resourceNames")})
	}
	return out
}

// The roles grant exactly what the controller does (TestDeployRBACIsEnough
// runs it under them), so nothing more can creep in.
func TestDeployRBACIsMinimal(t *testing.T) {
	objs := deployObjects(t)
	read := []string{"get", "list", "watch"}
	want := []rule{
		{[]string{kube.Group}, []string{kube.MachineConfigs.Resource}, []string{"create", "delete", "get", "list", "watch"}, nil},
		{[]string{kube.Group}, []string{kube.MachineConfigPools.Resource}, []string{"get", "list", "patch", "watch"}, nil},
		{[]string{kube.Group}, []string{kube.MachineConfigPools.Resource + "/status"}, []string{"patch"}, nil},
		{[]string{kube.Group}, []string{kube.ControllerConfigs.Resource}, read, nil},
		{[]string{kube.Group}, []string{containerRuntimeConfigs.Resource, kubeletConfigs.Resource}, read, nil},
		{[]string{kube.MachineConfigurations.Group}, []string{kube.MachineConfigurations.Resource}, read, []string{clusterMachineConfiguration}},
		{[]string{""}, []string{nodesGVR.Resource}, []string{"list"}, nil},
	}
	if got := rules(t, objs["ClusterRole/mcs-controller"]); yamlString(got) != yamlString(want) {
		t.Errorf("ClusterRole rules\n%s\nwant\n%s", yamlString(got), yamlString(want))
	}
	leases := []rule{{[]string{"coordination.k8s.io"}, []string{"leases"}, []string{"create", "get", "update"}, nil}}
	role := objs["Role/mcs-controller"]
	if got := rules(t, role); yamlString(got) != yamlString(leases) || role.GetNamespace() != "mcs" {
		t.Errorf("Role in %s rules\n%s", role.GetNamespace(), yamlString(got))
	}
	events := []rule{{[]string{""}, []string{"events"}, []string{"create", "patch"}, nil}}
	if er := objs["Role/mcs-controller-events"]; yamlString(rules(t, er)) != yamlString(events) || er.GetNamespace() != "default" {
		t.Errorf("Role mcs-controller-events in %s rules\n%s", er.GetNamespace(), yamlString(rules(t, er)))
	}
	for _, b := range []string{"ClusterRoleBinding/mcs-controller", "RoleBinding/mcs-controller", "RoleBinding/mcs-controller-events"} {
		u := objs[b]
		if u == nil {
			t.Fatalf("no %s", b)
		}
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		if yamlString(subjects) != yamlString([]any{map[string]any{"kind": "ServiceAccount", "name": "mcs-controller", "namespace": "mcs"}}) {
			t.Errorf("%s subjects %s", b, yamlString(subjects))
		}
	}

	dep := objs["Deployment/mcs-controller"]
	if dep == nil {
		t.Fatal("no Deployment")
	}
	spec := dep.Object["spec"].(map[string]any)
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	c := pod["containers"].([]any)[0].(map[string]any)
	args := yamlString(c["args"])
	for _, check := range []struct {
		what string
		ok   bool
	}{
		{"2 replicas", yamlString(spec["replicas"]) == "2"},
		{"the ServiceAccount", pod["serviceAccountName"] == "mcs-controller"},
		{"the controller subcommand", strings.HasPrefix(args, "- controller\n")},
		{"not a dry run", !strings.Contains(args, "dry-run")},
		{"the Lease's namespace from the pod", strings.Contains(yamlString(c["env"]), "fieldPath: metadata.namespace")},
		{"probes on the status port", strings.Contains(args, "--listen=:22625") && strings.Contains(yamlString(c["ports"]), "containerPort: 22625")},
		{"readiness on /readyz", yamlString(c["readinessProbe"].(map[string]any)["httpGet"]) == "path: /readyz\nport: http"},
	} {
		if !check.ok {
			t.Errorf("the Deployment lacks %s", check.what)
		}
	}
}

// The controller as its ServiceAccount: it renders, writes, elects and
// prunes with no error, and is refused what it must not do: read secrets
// or config maps, rewrite a rendered config, delete a pool, touch nodes.
func TestDeployRBACIsEnough(t *testing.T) {
	cp := needControlPlane(t)
	sa := serviceAccount(t, cp)
	cp.Apply(t, poolObject(t, "worker"), mcObject(t, "50-worker", "worker", "one"), nodeObject("n1", nil))
	c := startController(t, cp, Config{REST: sa, Prune: true, Keep: 0, PruneGrace: time.Millisecond, LeaseName: "mcs-controller"})
	var first string
	kubetest.Eventually(t, 20*time.Second, "rendered as the ServiceAccount", func() error {
		first = configuration(pool(t, cp, "worker"))
		if first == "" {
			return fmt.Errorf("status %+v", c.book.copy())
		}
		return nil
	})
	cp.Apply(t, mcObject(t, "50-worker", "worker", "two"))
	kubetest.Eventually(t, 20*time.Second, "the old config pruned", func() error {
		if c := renderDegraded(pool(t, cp, "worker")); c == nil || c["status"] != "False" {
			return fmt.Errorf("condition %v", c)
		}
		if _, ok := renderedConfigs(t, cp, "worker")[first]; ok {
			return fmt.Errorf("%s still there", first)
		}
		return nil
	})
	st := c.book.copy()
	if st.LastError != "" || st.Pools["worker"].LastError != "" {
		t.Errorf("errors as the ServiceAccount: %q %q", st.LastError, st.Pools["worker"].LastError)
	}

	ctx := context.Background()
	saClients := kubetest.ClientsFor(t, sa)
	client, dyn := saClients.Kube, saClients.Dynamic
	current := configuration(pool(t, cp, "worker"))
	for what, err := range map[string]error{
		"listing secrets":             errOf(client.CoreV1().Secrets("mcs").List(ctx, metav1.ListOptions{})),
		"listing config maps":         errOf(client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})),
		"reading a node":              errOf(client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})),
		"patching a node":             errOf(client.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})),
		"a Lease elsewhere":           errOf(client.CoordinationV1().Leases("kube-system").Get(ctx, "x", metav1.GetOptions{})),
		"rewriting a rendered config": errOf(dyn.Resource(kube.MachineConfigs).Patch(ctx, current, types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})),
		"deleting a pool":             dyn.Resource(kube.MachineConfigPools).Delete(ctx, "worker", metav1.DeleteOptions{}),
		"reading the skew policy":     errOf(dyn.Resource(kube.MachineConfigurations).List(ctx, metav1.ListOptions{})),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want forbidden", what, err)
		}
	}
}

func errOf[T any](_ T, err error) error { return err }

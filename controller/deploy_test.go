package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

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

var yamlString = kubetest.YAML

// The roles grant exactly what the controller does (TestDeployRBACIsEnough
// runs it under them), so nothing more can creep in.
func TestDeployRBACIsMinimal(t *testing.T) {
	objs := deployObjects(t)
	read := []string{"get", "list", "watch"}
	want := []kubetest.Rule{
		{Groups: []string{kube.Group}, Resources: []string{kube.MachineConfigs.Resource}, Verbs: []string{"create", "delete", "get", "list", "watch"}},
		{Groups: []string{kube.Group}, Resources: []string{kube.MachineConfigPools.Resource}, Verbs: []string{"get", "list", "patch", "watch"}},
		{Groups: []string{kube.Group}, Resources: []string{kube.MachineConfigPools.Resource + "/status"}, Verbs: []string{"patch"}},
		{Groups: []string{kube.Group}, Resources: []string{kube.ControllerConfigs.Resource, kube.OSImageStreams.Resource}, Verbs: read},
		{Groups: []string{kube.Group}, Resources: []string{containerRuntimeConfigs.Resource, kubeletConfigs.Resource}, Verbs: read},
		{Groups: []string{kube.MachineConfigurations.Group}, Resources: []string{kube.MachineConfigurations.Resource}, Verbs: read, Names: []string{clusterMachineConfiguration}},
		{Groups: []string{""}, Resources: []string{nodesGVR.Resource}, Verbs: []string{"list"}},
	}
	if got := kubetest.Rules(t, objs["ClusterRole/mcs-controller"]); yamlString(got) != yamlString(want) {
		t.Errorf("ClusterRole rules\n%s\nwant\n%s", yamlString(got), yamlString(want))
	}
	leases := []kubetest.Rule{{Groups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create", "get", "update"}}}
	role := objs["Role/mcs-controller"]
	if got := kubetest.Rules(t, role); yamlString(got) != yamlString(leases) || role.GetNamespace() != "mcs" {
		t.Errorf("Role in %s rules\n%s", role.GetNamespace(), yamlString(got))
	}
	events := []kubetest.Rule{{Groups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}}
	if er := objs["Role/mcs-controller-events"]; yamlString(kubetest.Rules(t, er)) != yamlString(events) || er.GetNamespace() != "default" {
		t.Errorf("Role mcs-controller-events in %s rules\n%s", er.GetNamespace(), yamlString(kubetest.Rules(t, er)))
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
		if c := poolCondition(pool(t, cp, "worker"), conditionRenderDegraded); c == nil || c["status"] != "False" {
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

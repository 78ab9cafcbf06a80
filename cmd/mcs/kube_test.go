package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/internal/ignclient"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/source"
	"github.com/ignition-mcs/mcs/source/kube"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

// The server as deployed: --source kube with a kubeconfig, against a real
// kube-apiserver. It serves the cluster's pools, follows an edit, and
// takes the skew policy from the cluster's MachineConfiguration.
func TestServeKubernetes(t *testing.T) {
	kubeconfig, dyn, apply := controlPlane(t, true)
	apply(kube.MachineConfigPools, mctest.RolePool("worker"))
	apply(kube.MachineConfigs, workerMC("one"))

	in := start(t, "--source", "kube", "--kubeconfig", kubeconfig, "--listen-plain", "127.0.0.1:0", "--listen-tls", "", "--debounce", "20ms")
	const ua, v35 = "Ignition/v2.27.0", "application/vnd.coreos.ignition+json;version=3.5.0"
	serves := func(want string) func() bool {
		return func() bool {
			code, body, err := in.get("/config/worker", "Accept", v35, "User-Agent", ua)
			return err == nil && code == 200 && strings.Contains(string(body), want)
		}
	}
	waitFor(t, "the cluster's worker pool served", serves("data:,one"))
	if code, _, err := in.get("/readyz"); err != nil || code != 200 {
		t.Fatalf("/readyz: %d %v", code, err)
	}
	_, status, _ := in.get("/status")
	if !strings.Contains(string(status), "kubernetes https://127.0.0.1") {
		t.Errorf("/status does not name the API server: %s", status)
	}

	apply(kube.MachineConfigs, workerMC("two"))
	waitFor(t, "the edited MachineConfig served", serves("data:,two"))

	// A node booting before its pool exists waits, and boots once the
	// admin creates the pool in the cluster.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	node := ignclient.Start(ctx, ignclient.Get(t, "v2.27.0"), in.base+"/config/infra", ignclient.Options{})
	waitLogged(t, in, map[string]*ignclient.Running{"v2.27.0": node}, "cause=unknown-pool pool=infra")
	apply(kube.MachineConfigPools, strings.Split(pools, "---\n")[1])
	apply(kube.MachineConfigs, infraMC(nil))
	if b, err := node.Booted(t).ReadFile("/etc/infra-hello"); err != nil || string(b) != "infra" {
		t.Fatalf("/etc/infra-hello: %q %v", b, err)
	}

	apply(kube.MachineConfigurations, `{apiVersion: operator.openshift.io/v1, kind: MachineConfiguration, metadata: {name: cluster},
  spec: {managementState: Managed, bootImageSkewEnforcement: {mode: Manual, manual: {mode: OCPVersion, ocpVersion: 4.12.0}}}}`)
	waitFor(t, "the cluster's skew policy refusing nodes", serves("/etc/issue.d/mcs-cannot-join-worker.issue"))

	// The cluster was told: the first fetches and the refusal are Events
	// on the pool, from this host.
	host, _ := os.Hostname()
	waitFor(t, "Events on the worker pool", func() bool {
		reasons := poolEventReasons(dyn, "worker", host)
		return reasons[string(source.NoticeFirstFetch)] && reasons[string(source.NoticeNodeRefused)]
	})

	if err := in.stop(); err != nil {
		t.Fatalf("run: %v\n%s", err, in.stderr.String())
	}
}

// controlPlane starts a kube-apiserver with kubetest.CRDFiles(allCRDs)
// installed (it skips under -short, and fails under CI without the
// binaries), and returns a kubeconfig file for it, an admin client and a function that
// applies objects.
func controlPlane(t *testing.T, allCRDs bool) (string, dynamic.Interface, func(schema.GroupVersionResource, string)) {
	t.Helper()
	cp := kubetest.New(t, allCRDs)
	dyn := cp.Dynamic
	apply := func(gvr schema.GroupVersionResource, doc string) {
		t.Helper()
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		res := dyn.Resource(gvr)
		cur, err := res.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err == nil {
			u.SetResourceVersion(cur.GetResourceVersion())
			_, err = res.Update(ctx, u, metav1.UpdateOptions{})
		} else {
			_, err = res.Create(ctx, u, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("applying %s: %v", u.GetName(), err)
		}
	}
	return cp.Kubeconfig(t, "mcs-test"), dyn, apply
}

// poolEventReasons are the reasons of the Events on pool from host.
func poolEventReasons(dyn dynamic.Interface, pool, host string) map[string]bool {
	l, err := dyn.Resource(kube.Events).Namespace(metav1.NamespaceDefault).List(context.Background(),
		metav1.ListOptions{FieldSelector: "involvedObject.kind=MachineConfigPool,involvedObject.name=" + pool})
	reasons := map[string]bool{}
	if err != nil {
		return reasons
	}
	for _, ev := range l.Items {
		if h, _, _ := unstructured.NestedString(ev.Object, "source", "host"); h == host {
			r, _, _ := unstructured.NestedString(ev.Object, "reason")
			reasons[r] = true
		}
	}
	return reasons
}

// startSubcommand runs `mcs ARGS...` through dispatch, as main does.
func startSubcommand(t *testing.T, listens bool, args ...string) *instance {
	t.Helper()
	return launch(t, listens, func(ctx context.Context, stdout, stderr io.Writer) error {
		return dispatch(ctx, args, nil, stdout, stderr)
	})
}

// `mcs controller` and `mcs prune` as deployed: with a kubeconfig, against
// a real kube-apiserver. The controller points the pool at its rendered
// config and says so in /status; prune lists it as in use.
func TestControllerAndPruneSubcommands(t *testing.T) {
	kubeconfig, dyn, apply := controlPlane(t, false)
	apply(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, `{apiVersion: v1, kind: Namespace, metadata: {name: mcs}}`)
	apply(kube.MachineConfigPools, mctest.RolePool("worker"))
	apply(kube.MachineConfigs, workerMC("one"))

	ctl := startSubcommand(t, true, "controller", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0", "--identity", "test", "--max-spec", "3.2.0")
	var name string
	waitFor(t, "the pool pointed at its rendered config", func() bool {
		p, err := dyn.Resource(kube.MachineConfigPools).Get(context.Background(), "worker", metav1.GetOptions{})
		if err == nil {
			name, _, _ = unstructured.NestedString(p.Object, "spec", "configuration", "name")
		}
		return name != ""
	})
	_, status, _ := ctl.get("/status")
	for _, want := range []string{`"leading": true`, `"identity": "test"`, `"rendered": "` + name + `"`} {
		if !strings.Contains(string(status), want) {
			t.Errorf("/status lacks %s:\n%s", want, status)
		}
	}
	if code, _, _ := ctl.get("/readyz"); code != 200 {
		t.Errorf("/readyz %d", code)
	}

	list := startSubcommand(t, false, "prune", "list", "--kubeconfig", kubeconfig)
	if err := <-list.done; err != nil {
		t.Fatalf("prune list: %v\n%s", err, list.stderr.String())
	}
	if out := list.stdout.String(); !strings.Contains(out, name) || !strings.Contains(out, "in use: pool worker spec") {
		t.Errorf("prune list:\n%s", out)
	}
	list.done <- nil
	bad := startSubcommand(t, false, "prune", "--kubeconfig", kubeconfig, "extra")
	if err := <-bad.done; err != cmdline.ErrUsage {
		t.Errorf("prune with an extra argument: %v", err)
	}
	bad.done <- nil
	if err := ctl.stop(); err != nil {
		t.Fatalf("controller: %v\n%s", err, ctl.stderr.String())
	}
}

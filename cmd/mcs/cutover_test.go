package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vincent-petithory/dataurl"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/ignclient"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/internal/shareddata"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/internal/testpki"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// cluster is what an OpenShift cluster holds that a cutover depends on,
// in a real kube-apiserver with openshift/api's CRDs.
type cluster struct {
	cp        *kubetest.ControlPlane
	rendered  map[string]*render.Result // by pool, under the cluster's names
	rootCA    *testpki.CA               // signed machine-config-server-tls; in the pointer configs
	apiCA     []byte                    // kubeconfig-data's ca-bundle.crt
	token     string                    // the node-bootstrapper token
	image     string                    // the worker pool's layered image
	certDir   string                    // machine-config-server-tls as the DaemonSet mounts it
	tokenDir  string                    // node-bootstrapper-token as the DaemonSet mounts it
	mcsConfig string                    // kubeconfig of mcs's ServiceAccount (deploy/openshift)
}

const (
	machineAPI = "openshift-machine-api"
	// layeredImage is outside the cluster (its registry is not a Service).
	layeredImage = "quay.example.com/org/os@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// The cutover rehearsal: a cluster as OpenShift leaves it (the realdata
// pools, MachineConfigs and their rendered configs with pool status, the
// serving certificate signed by a root CA, worker-user-data holding the
// installer's pointer config with that CA, the node-bootstrapper token,
// kubeconfig-data, and an image-mode worker pool) and mcs start run with the
// DaemonSet's arguments as deploy/openshift's ServiceAccount. Real Ignition
// clients of three eras boot with the pointer config read from the Secret
// unchanged; the CA changed in kubeconfig-data reaches the next boot
// without a restart. mcs binds its TLS port (22623's stand-in) on port 0,
// and worker-user-data, naming it, is written once mcs says which: mcs
// start reads no user-data, so the order changes nothing it does.
func TestCutoverRehearsal(t *testing.T) {
	c := newCluster(t)
	args := append(daemonSetArgs(t, "--apiserver-url="+c.cp.Admin.Host),
		"--kubeconfig", c.mcsConfig, "--cert", filepath.Join(c.certDir, "tls.crt"), "--key", filepath.Join(c.certDir, "tls.key"),
		"--bootstrap-token-dir", c.tokenDir, "--listen-tls", "127.0.0.1:0", "--listen-plain", "127.0.0.1:0",
		// mcs start's own default, 127.0.0.1:22626, is taken when another
		// make test runs on the machine.
		"--listen-admin", "127.0.0.1:0",
		"--debounce", "20ms", "--poll", "100ms")
	in := startSubcommand(t, true, args...)
	c.applyUserData(t, in.tlsURL(t))
	waitFor(t, "both pools served", func() bool {
		a, b := in.servedFile(t, "master", pathAnnotations), in.servedFile(t, "worker", pathAnnotations)
		return strings.Contains(a, c.rendered["master"].Name) && strings.Contains(b, c.rendered["worker"].Name)
	})
	c.checkVerifyStep(t, in)
	pointer := c.userData(t, "worker-user-data")
	if dir := os.Getenv("MCS_CUTOVER_DUMP"); dir != "" {
		c.dump(t, in, dir)
	}

	for _, v := range []string{"v2.27.0", "v2.14.0", "v2.9.0"} {
		t.Run(v, func(t *testing.T) {
			root := bootPointer(t, v, pointer)
			c.checkNode(t, root, "worker", c.apiCA)
		})
	}
	if got := in.servedFile(t, "master", pathAnnotations); strings.Contains(got, "Image") {
		t.Errorf("master is not an image-mode pool, but its nodes are told %s", got)
	}

	// The API server's CA rotates: the MCO rewrites kubeconfig-data, and
	// the next node trusts the new CA, with no restart of mcs.
	next := testpki.NewCA(t).PEM
	c.cp.Apply(t, kubeconfigData(next))
	waitFor(t, "the new CA served", func() bool {
		return strings.Contains(in.servedFile(t, "worker", pathKubeconfig), base64.StdEncoding.EncodeToString(next))
	})
	c.checkNode(t, bootPointer(t, "v2.27.0", pointer), "worker", next)
	if err := in.stop(); err != nil {
		t.Fatalf("mcs start: %v\n%s", err, in.stderr.String())
	}
	c.cutover(t)
	c.preflight(t)
}

// resourceVersions are the values a plan's JSON patch tests.
var resourceVersions = regexp.MustCompile(`"path":"/metadata/resourceVersion","value":"[0-9]+"`)

// cutover runs mcs cutover plan, apply and back as a cluster admin against
// OpenShift's operator Deployment, its server's DaemonSet and the
// ClusterVersion with an admin's own override
// (testdata/cutover-openshift.yaml). No kubelet and no controller run
// here, so no pod starts and no rollout completes: apply stops waiting for
// its DaemonSet's rollout and back for the operator's server, each saying
// so; everything they change before that is checked.
func (c *cluster) cutover(t *testing.T) {
	c.cp.ApplyFiles(t, filepath.Join("testdata", "cutover-openshift.yaml"))
	admin := c.cp.Kubeconfig(t, "cluster-admin")
	run := func(args ...string) (string, string, error) {
		in := startSubcommand(t, false, append([]string{"cutover", args[0], "--kubeconfig", admin}, args[1:]...)...)
		err := <-in.done
		in.done <- err
		return in.stdout.String(), in.stderr.String(), err
	}
	wait := []string{"--timeout", "1s", "--interval", "50ms"}
	out, _, err := run("plan")
	if err != nil {
		t.Fatalf("mcs cutover plan: %v", err)
	}
	testkit.Golden(t, filepath.Join("testdata", "cutover-plan.txt"), resourceVersions.ReplaceAllString(out, `"path":"/metadata/resourceVersion","value":"RV"`), *update)

	out, errOut, err := run(append([]string{"apply", "--image", "registry.example.com/mcs:v1"}, wait...)...)
	if err == nil || !strings.Contains(err.Error(), "waiting for DaemonSet machine-config-server to roll out") || !strings.Contains(out, "no blockers") {
		t.Fatalf("mcs cutover apply: %v\n%s\n%s", err, out, errOut)
	}
	ds, err := c.cp.Kube.AppsV1().DaemonSets(mcoNS).Get(context.Background(), "machine-config-server", metav1.GetOptions{})
	if err != nil || ds.Spec.Template.Spec.Containers[0].Command[0] != "/usr/bin/mcs" ||
		ds.Spec.Template.Spec.Containers[0].Args[1] != "--apiserver-url=https://api-int.rehearsal.example.com:6443" {
		t.Fatalf("the DaemonSet after apply: %v %+v", err, ds.Spec.Template.Spec.Containers)
	}
	c.checkCutoverState(t, "apply", 0, []string{"cluster-monitoring-operator", "machine-config-operator"})

	out, errOut, err = run(append([]string{"back"}, wait...)...)
	if err == nil || !strings.Contains(err.Error(), "mcs keeps serving until the operator puts its server back") {
		t.Fatalf("mcs cutover back: %v\n%s\n%s", err, out, errOut)
	}
	c.checkCutoverState(t, "back", 1, []string{"cluster-monitoring-operator"})
	if _, err := c.cp.Kube.CoreV1().ServiceAccounts(mcoNS).Get(context.Background(), "mcs-server", metav1.GetOptions{}); err != nil {
		t.Errorf("mcs's ServiceAccount deleted while mcs still serves: %v", err)
	}
}

// checkCutoverState checks the operator's replicas and the names of the
// ClusterVersion's overrides after verb.
func (c *cluster) checkCutoverState(t *testing.T, verb string, replicas int32, overrides []string) {
	t.Helper()
	ctx := context.Background()
	dep, err := c.cp.Kube.AppsV1().Deployments(mcoNS).Get(ctx, "machine-config-operator", metav1.GetOptions{})
	if err != nil || *dep.Spec.Replicas != replicas {
		t.Errorf("after %s the operator has %v replicas (%v), want %d", verb, dep.Spec.Replicas, err, replicas)
	}
	cv, err := c.cp.Dynamic.Resource(schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}).Get(ctx, "version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, _, _ := unstructured.NestedSlice(cv.Object, "spec", "overrides")
	var names []string
	for _, o := range list {
		names = append(names, o.(map[string]any)["name"].(string))
	}
	if strings.Join(names, " ") != strings.Join(overrides, " ") {
		t.Errorf("after %s the overrides name %v, want %v", verb, names, overrides)
	}
}

// preflight runs mcs preflight as mcs's ServiceAccount: clean on the
// rehearsed cluster, then blocked, naming what, with a permission removed
// and with an object missing.
func (c *cluster) preflight(t *testing.T) {
	ctx := context.Background()
	run := func() (string, error) {
		// 15 s: a deadline on a real API server; 5 s ran out at load 27 ("caches not synced").
		in := startSubcommand(t, false, "preflight", "--kubeconfig", c.mcsConfig, "--timeout", "15s")
		err := <-in.done
		in.done <- err
		return in.stdout.String(), err
	}
	out, err := run()
	for _, want := range []string{"no blockers", "worker", c.rendered["worker"].Name, "image mode: " + c.image, "image mode: no (no MachineOSConfig names the pool)", "content same"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("preflight on the rehearsed cluster: %v, no %q in\n%s", err, want, out)
		}
	}
	if err := c.cp.Kube.RbacV1().Roles(mcoNS).Delete(ctx, "mcs-server", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err = run()
	if err != errBlocked || !strings.Contains(out, "BLOCKER  get,list,watch configmaps/kubeconfig-data in openshift-machine-config-operator  missing: get, list, watch") {
		t.Errorf("preflight without the ConfigMap Role: %v\n%s", err, out)
	}
	c.cp.ApplyFiles(t, filepath.Join("..", "..", "deploy", "openshift", "rbac.yaml"))
	if err := c.cp.Dynamic.Resource(kube.MachineConfigs).Delete(ctx, c.rendered["worker"].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err = run()
	if err != errBlocked || !strings.Contains(out, "names MachineConfig "+c.rendered["worker"].Name+", which does not exist") {
		t.Errorf("preflight without the worker's rendered config: %v\n%s", err, out)
	}
}

const (
	pathAnnotations  = "/etc/machine-config-daemon/node-annotations.json"
	pathKubeconfig   = "/etc/kubernetes/kubeconfig"
	pathEncapsulated = "/etc/ignition-machine-config-encapsulated.json"
)

// newCluster starts a control plane holding an OpenShift cluster's
// objects (see cluster).
func newCluster(t *testing.T) *cluster {
	t.Helper()
	cp := kubetest.New(t, true)
	c := &cluster{cp: cp, rootCA: testpki.NewCA(t), apiCA: testpki.NewCA(t).PEM, image: layeredImage}
	for _, ns := range []string{mcoNS, machineAPI, "openshift-image-registry"} {
		cp.Apply(t, kubetest.ToObject(t, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}))
	}
	dir := shareddata.Path(t, "realdata", "aws")
	cp.ApplyDir(t, dir)
	c.applyRendered(t, dir)
	c.applySecrets(t)
	c.applyImageMode(t)
	sa := cp.ServiceAccount(t, mcoNS, "mcs-server", filepath.Join("..", "..", "deploy", "openshift"), "serviceaccount.yaml", "rbac.yaml")
	c.mcsConfig = writeKubeconfig(t, sa)
	return c
}

// applyRendered writes each pool's rendered config as OpenShift's render
// controller does (spec 3.5, owned by the pool, named by its hash, which
// mcs's renderer computes as OpenShift's does) and points the pool at it, one
// machine updated.
func (c *cluster) applyRendered(t *testing.T, dir string) {
	t.Helper()
	_, results := servetest.Render(t, dir, render.Options{})
	c.rendered = servetest.ByPool(results)
	for _, r := range results {
		c.cp.Apply(t, kubetest.ToObject(t, asRendered(t, r)))
		pool, err := c.cp.Dynamic.Resource(kube.MachineConfigPools).Get(context.Background(), r.Pool, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ref := map[string]any{"name": r.Name}
		_ = unstructured.SetNestedMap(pool.Object, ref, "spec", "configuration")
		_ = unstructured.SetNestedField(pool.Object, map[string]any{
			"configuration": ref, "machineCount": int64(3), "updatedMachineCount": int64(1), "readyMachineCount": int64(1),
			"unavailableMachineCount": int64(0), "degradedMachineCount": int64(0), "observedGeneration": int64(1),
		}, "status")
		c.cp.Apply(t, pool)
	}
}

// asRendered is r's MachineConfig as OpenShift's render controller writes
// it: the config at spec 3.5, whatever the lowest spec is.
func asRendered(t *testing.T, r *render.Result) *render.MachineConfig {
	t.Helper()
	mc := *r.MachineConfig
	js, err := convert.Encode(&r.Config, convert.V3_5, false)
	if err != nil {
		t.Fatal(err)
	}
	mc.Spec.Config = js
	return &mc
}

// applySecrets writes the serving certificate, the node-bootstrapper token
// and kubeconfig-data, and mounts the first two as the DaemonSet does.
func (c *cluster) applySecrets(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	pair := c.rootCA.Serving(t)
	c.cp.Apply(t, secret(mcoNS, "machine-config-server-tls", "kubernetes.io/tls", map[string][]byte{"tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM}))
	c.cp.Apply(t, kubetest.ToObject(t, map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "node-bootstrapper", "namespace": mcoNS}}))
	tr, err := c.cp.Kube.CoreV1().ServiceAccounts(mcoNS).CreateToken(ctx, "node-bootstrapper", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.token = tr.Status.Token
	// ca.crt is the service-account CA: not what nodes must trust once
	// kubeconfig-data exists.
	c.cp.Apply(t, secret(mcoNS, "node-bootstrapper-token", "Opaque", map[string][]byte{"token": []byte(c.token), "ca.crt": testpki.NewCA(t).PEM}))
	c.cp.Apply(t, kubeconfigData(c.apiCA))
	c.certDir = c.mount(t, mcoNS, "machine-config-server-tls")
	c.tokenDir = c.mount(t, mcoNS, "node-bootstrapper-token")
}

// applyUserData writes the installer's worker-user-data: the pointer
// config fetching worker from base (https://host:port) and trusting the
// root CA.
func (c *cluster) applyUserData(t *testing.T, base string) {
	t.Helper()
	pointer, _ := json.Marshal(map[string]any{"ignition": map[string]any{
		"version": "3.2.0",
		"config":  map[string]any{"merge": []any{map[string]any{"source": base + "/config/worker"}}},
		"security": map[string]any{"tls": map[string]any{"certificateAuthorities": []any{
			map[string]any{"source": "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString(c.rootCA.PEM)}}}},
	}})
	c.cp.Apply(t, secret(machineAPI, "worker-user-data", "Opaque", map[string][]byte{"userData": pointer, "disableTemplating": []byte("true")}))
}

// applyImageMode makes worker an image-mode pool: a MachineOSConfig with
// an image and a succeeded MachineOSBuild of its rendered config.
func (c *cluster) applyImageMode(t *testing.T) {
	t.Helper()
	now := time.Now().UTC().Format(time.RFC3339)
	c.cp.Apply(t, kubetest.ToObject(t, map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineOSConfig", "metadata": map[string]any{"name": "worker"},
		"spec": map[string]any{"machineConfigPool": map[string]any{"name": "worker"}, "imageBuilder": map[string]any{"imageBuilderType": "Job"},
			"renderedImagePushSecret": map[string]any{"name": "push"}, "renderedImagePushSpec": "quay.example.com/org/os:latest"},
		"status": map[string]any{"currentImagePullSpec": c.image},
	}))
	c.cp.Apply(t, kubetest.ToObject(t, map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineOSBuild", "metadata": map[string]any{"name": "worker-build"},
		"spec": map[string]any{"machineConfig": map[string]any{"name": c.rendered["worker"].Name}, "machineOSConfig": map[string]any{"name": "worker"},
			"renderedImagePushSpec": "quay.example.com/org/os:latest"},
		"status": map[string]any{"digestedImagePushSpec": c.image, "conditions": []any{map[string]any{
			"type": "Succeeded", "status": "True", "reason": "Succeeded", "message": "built", "lastTransitionTime": now}}},
	}))
}

// mount writes a Secret's keys as files in a directory, as a volume does.
func (c *cluster) mount(t *testing.T, ns, name string) string {
	t.Helper()
	s := kubetest.Get(t, c.cp.Kube.CoreV1().Secrets(ns), name)
	dir := t.TempDir()
	for k, v := range s.Data {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// userData is a user-data Secret's pointer config, as the cluster holds it.
func (c *cluster) userData(t *testing.T, name string) []byte {
	t.Helper()
	return kubetest.Get(t, c.cp.Kube.CoreV1().Secrets(machineAPI), name).Data["userData"]
}

// checkNode checks what a node of pool found on its disk: the pool's
// files, the kubeconfig built from the token, the API URL and ca, and for
// the image-mode worker the layered image.
func (c *cluster) checkNode(t *testing.T, root, pool string, ca []byte) {
	t.Helper()
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, f := range c.rendered[pool].Config.Storage.Files {
		if _, err := os.Stat(filepath.Join(root, f.Path)); err != nil {
			t.Errorf("%s of the rendered config not written: %v", f.Path, err)
		}
	}
	kc, err := clientcmd.Load([]byte(read(pathKubeconfig)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil || kc.Clusters[ctx.Cluster] == nil || kc.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatalf("kubeconfig without its context: %+v", kc)
	}
	cl, user := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
	if cl.Server != c.cp.Admin.Host || string(cl.CertificateAuthorityData) != string(ca) || user.Token != c.token {
		t.Errorf("kubeconfig: server %s (want %s), CA from kubeconfig-data %v, token %v", cl.Server, c.cp.Admin.Host,
			string(cl.CertificateAuthorityData) == string(ca), user.Token == c.token)
	}
	var ann map[string]string
	if err := json.Unmarshal([]byte(read(pathAnnotations)), &ann); err != nil {
		t.Fatal(err)
	}
	var mc struct {
		Spec struct {
			OSImageURL string `json:"osImageURL"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(read(pathEncapsulated)), &mc); err != nil {
		t.Fatal(err)
	}
	const prefix = "machineconfiguration.openshift.io/"
	if ann[prefix+"currentConfig"] != c.rendered[pool].Name || ann[prefix+"currentImage"] != c.image || ann[prefix+"desiredImage"] != c.image || mc.Spec.OSImageURL != c.image {
		t.Errorf("image-mode node: annotations %v, osImageURL %s; want %s and image %s", ann, mc.Spec.OSImageURL, c.rendered[pool].Name, c.image)
	}
}

// bootPointer runs a real Ignition client with pointer as its pointer config
// and returns the root it wrote.
func bootPointer(t *testing.T, version string, pointer []byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return ignclient.Boot(ctx, t, ignclient.Get(t, version), "", ignclient.Options{Pointer: pointer}).Root
}

// servedFile is the contents of one file of what the plain listener
// serves for pool at spec 3.5, or "".
func (in *instance) servedFile(t *testing.T, pool, path string) string {
	t.Helper()
	code, body, err := in.get("/config/"+pool, "Accept", "application/vnd.coreos.ignition+json;version=3.5.0")
	if err != nil || code != 200 {
		return ""
	}
	got, err := convert.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range got.Config.Storage.Files {
		if f.Path == path && f.Contents.Source != nil {
			du, err := dataurl.DecodeString(*f.Contents.Source)
			if err != nil {
				t.Fatal(err)
			}
			return string(du.Data)
		}
	}
	return ""
}

// daemonSetArgs are deploy/openshift's DaemonSet's arguments, with the
// ones given instead of those of the same flag.
func daemonSetArgs(t *testing.T, override ...string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "openshift", "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.Unmarshal(b, &ds); err != nil || len(ds.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("daemonset.yaml: %v", err)
	}
	var out []string
	for _, a := range ds.Spec.Template.Spec.Containers[0].Args {
		name, _, _ := strings.Cut(a, "=")
		replaced := false
		for _, o := range override {
			if on, _, _ := strings.Cut(o, "="); on == name {
				out, replaced = append(out, o), true
			}
		}
		if !replaced {
			out = append(out, a)
		}
	}
	return out
}

func kubeconfigData(ca []byte) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": kube.KubeconfigDataName, "namespace": mcoNS},
		"binaryData": map[string]any{"ca-bundle.crt": base64.StdEncoding.EncodeToString(ca)},
	}}
}

func secret(ns, name, typ string, data map[string][]byte) *unstructured.Unstructured {
	d := map[string]any{}
	for k, v := range data {
		d[k] = base64.StdEncoding.EncodeToString(v)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": typ, "metadata": map[string]any{"name": name, "namespace": ns}, "data": d,
	}}
}

// writeKubeconfig writes a kubeconfig file for rc (a token identity).
func writeKubeconfig(t *testing.T, rc *rest.Config) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: rc.BearerToken}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// dump writes, for a comparison with OpenShift's own server code (see
// docs/compatibility.md, "The server"), the cluster's objects as its
// listers would return them, in the bootstrap server's layout too, and
// what mcs start serves each pool at each spec. Only with
// $MCS_CUTOVER_DUMP set.
func (c *cluster) dump(t *testing.T, in *instance, dir string) {
	t.Helper()
	ctx := context.Background()
	write := func(name string, data []byte) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	obj := func(name string, u *unstructured.Unstructured) {
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		write(name, b)
	}
	for pool, r := range c.rendered {
		p, _ := c.cp.Dynamic.Resource(kube.MachineConfigPools).Get(ctx, pool, metav1.GetOptions{})
		obj("pools/"+pool+".yaml", p)
		obj("bootstrap/machine-pools/"+pool+".yaml", p)
		mc, _ := c.cp.Dynamic.Resource(kube.MachineConfigs).Get(ctx, r.Name, metav1.GetOptions{})
		obj("machine-configs/"+r.Name+".yaml", mc)
		obj("bootstrap/machine-configs/"+r.Name+".yaml", mc)
		for _, v := range []string{"", "3.5.0", "3.4.0", "3.3.0", "3.2.0", "3.1.0", "2.2.0"} {
			var h []string
			if v != "" {
				h = []string{"Accept", "application/vnd.coreos.ignition+json;version=" + v}
			}
			_, body, _ := in.get("/config/"+pool, h...)
			write("served/"+pool+"-"+v+".json", body)
		}
	}
	cc, _ := c.cp.Dynamic.Resource(kube.ControllerConfigs).Get(ctx, kube.DefaultControllerConfig, metav1.GetOptions{})
	obj("controllerconfig.yaml", cc)
	obj("bootstrap/controller-config/machine-config-controller.yaml", cc)
	for _, r := range []schema.GroupVersionResource{kube.MachineOSConfigs, kube.MachineOSBuilds} {
		l, _ := c.cp.Dynamic.Resource(r).List(ctx, metav1.ListOptions{})
		for i := range l.Items {
			obj(r.Resource+"/"+l.Items[i].GetName()+".yaml", &l.Items[i])
		}
	}
	write("kubeconfig-data-ca-bundle.crt", c.apiCA)
	for _, f := range []string{"token", "ca.crt"} {
		b, _ := os.ReadFile(filepath.Join(c.tokenDir, f))
		write("token/"+f, b)
	}
	write("apiserver-url", []byte(c.cp.Admin.Host))
}

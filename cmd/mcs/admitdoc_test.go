package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/internal/testpki"
)

// docSteps are the ```sh blocks of a section of a Markdown file, up to its
// first subsection, with a list item's indentation taken off: the commands
// a reader pastes, in order.
func docSteps(t *testing.T, file, heading string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no %q", file, heading)
	}
	if end := regexp.MustCompile(`\n##+ `).FindStringIndex(sec); end != nil {
		sec = sec[:end[0]]
	}
	var script strings.Builder
	var indent string
	in := false
	for _, line := range strings.Split(sec, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case !in && trimmed == "```sh":
			in, indent = true, line[:len(line)-len(trimmed)]
		case in && trimmed == "```":
			in = false
		case in:
			script.WriteString(strings.TrimPrefix(line, indent) + "\n")
		}
	}
	if script.Len() == 0 {
		t.Fatalf("%s %q has no sh blocks", file, heading)
	}
	return script.String()
}

// docs/admission.md "Try it on any Kubernetes", run as written: openssl for
// the CA and certificate, the CRD from the module cache, mcs admit on
// loopback, its webhook-config applied by kubectl to a real kube-apiserver
// that then calls it; a write is lowered, one above the ceiling warned.
func TestAdmissionDocAnyKubernetes(t *testing.T) {
	for _, tool := range []string{"kubectl", "openssl", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			testkit.Missing(t, "no %s: the doc's commands need it (make kubectl)", tool)
		}
	}
	assets := kubetest.NeedAssets(t)
	// A cluster without the CRD: the doc installs it.
	cp, err := kubetest.Start(assets, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	script := docSteps(t, filepath.Join(root, "docs", "admission.md"), "## Try it on any Kubernetes")
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "mcs"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// A free port for the doc's PORT (mcs admit, another process, binds it).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+cp.Kubeconfig(t, "doc-reader"), "ADDR=127.0.0.1", "PORT="+port, "CLONE="+root)
	// Its own process group, so mcs admit, started in the background, is
	// stopped however the script ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	log, _ := os.ReadFile(filepath.Join(cmd.Dir, "admit.log"))
	if err != nil {
		t.Fatalf("the doc's steps: %v\n%s\n--- admit.log\n%s", err, out.String(), log)
	}
	for _, want := range []string{
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/mcs-admit created",
		"\n3.0.0\n",
		"Warning: MachineConfig 99-mcs-admit-kargs: $.spec.config.kernelArguments.shouldExist: kernel arguments need Ignition spec 3.3.0",
		`mutatingwebhookconfiguration.admissionregistration.k8s.io "mcs-admit" deleted`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the doc's steps did not print %q:\n%s\n--- admit.log\n%s", want, out.String(), log)
		}
	}
	// Cleaned up as the doc says.
	mcs, err := cp.Dynamic.Resource(schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"}).List(ctx, metav1.ListOptions{})
	if err != nil || len(mcs.Items) != 0 {
		t.Errorf("after the doc's clean-up: %d MachineConfigs (%v)", len(mcs.Items), err)
	}
	t.Run("cert-manager kustomization", func(t *testing.T) { checkCertManagerVariant(t, cp, root, filepath.Join(bin, "mcs")) })
}

// deploy/kubernetes/admit/ builds (kubectl's kustomize), its webhook is
// webhook-config --service's but for caBundle, which cert-manager injects
// from the Certificate whose Secret the pods mount, for the Service's DNS
// name; everything but cert-manager's own objects is accepted by the API
// server (cert-manager's CRDs are not here).
func checkCertManagerVariant(t *testing.T, cp *kubetest.ControlPlane, root, mcs string) {
	built, err := exec.Command("kubectl", "kustomize", filepath.Join(root, "deploy", "kubernetes", "admit")).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, built)
	}
	byKind := map[string][]*unstructured.Unstructured{}
	var apply []*unstructured.Unstructured
	for _, o := range kubetest.DecodeObjects(t, built) {
		byKind[o.GetKind()] = append(byKind[o.GetKind()], o)
		if o.GroupVersionKind().Group != "cert-manager.io" {
			apply = append(apply, o)
		}
	}
	for _, k := range []string{"ServiceMonitor", "PrometheusRule"} {
		if len(byKind[k]) > 0 {
			t.Errorf("a %s, whose CRD plain Kubernetes lacks", k)
		}
	}
	if strings.Contains(string(built), "service.beta.openshift.io") || strings.Contains(string(built), "node-role.kubernetes.io/master: \"\"") {
		t.Errorf("OpenShift's service CA annotations or master node selector kept:\n%s", built)
	}
	hook := byKind["MutatingWebhookConfiguration"][0]
	from := hook.GetAnnotations()["cert-manager.io/inject-ca-from"]
	ns, name, _ := strings.Cut(from, "/")
	var cert *unstructured.Unstructured
	for _, c := range byKind["Certificate"] {
		if c.GetNamespace() == ns && c.GetName() == name {
			cert = c
		}
	}
	if cert == nil {
		t.Fatalf("inject-ca-from %q names no Certificate", from)
	}
	secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	svc := byKind["Service"][0]
	if !slices.Contains(dns, svc.GetName()+"."+svc.GetNamespace()+".svc") {
		t.Errorf("Certificate dnsNames %v lack the Service's %s.%s.svc", dns, svc.GetName(), svc.GetNamespace())
	}
	vols, _, _ := unstructured.NestedSlice(byKind["Deployment"][0].Object, "spec", "template", "spec", "volumes")
	if !strings.Contains(fmt.Sprint(vols), "secretName:"+secret) {
		t.Errorf("the pods mount %v, not the Certificate's Secret %s", vols, secret)
	}
	// The same webhook as webhook-config --service prints, for the same
	// Service, but for caBundle.
	ca := testpki.NewCA(t)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(mcs, "admit", "webhook-config", "--service", svc.GetNamespace()+"/"+svc.GetName(), "--ca-file", caFile).Output()
	if err != nil {
		t.Fatalf("webhook-config --service: %v", err)
	}
	printed := kubetest.DecodeObjects(t, out)[0]
	hooks, _, _ := unstructured.NestedSlice(printed.Object, "webhooks")
	for _, h := range hooks {
		unstructured.RemoveNestedField(h.(map[string]any), "clientConfig", "caBundle")
	}
	want, _, _ := unstructured.NestedSlice(hook.Object, "webhooks")
	if !reflect.DeepEqual(hooks, want) {
		t.Errorf("webhook-config --service:\n%v\nthe kustomization's:\n%v", hooks, want)
	}
	cp.Apply(t, apply...)
	cp.Apply(t, printed) // webhook-config's output, with its caBundle, accepted as is
}

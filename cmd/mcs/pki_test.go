package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vincent-petithory/dataurl"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/ignclient"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/syncbuf"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/pki"
	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/source/kube"
)

const (
	mcoNS  = "openshift-machine-config-operator"
	mapiNS = "openshift-machine-api"
)

// pkiCluster is a control plane with the namespaces, the Infrastructure
// (api-int localhost, API VIP 127.0.0.1, so the serving certificate names
// the test's listener) and the pools of pools.yaml.
func pkiCluster(t *testing.T) (string, kubernetes.Interface) {
	t.Helper()
	kubeconfig, dyn, apply := controlPlane(t, true)
	rc, err := kube.RESTConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	for _, ns := range []string{mcoNS, mapiNS} {
		if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, doc := range strings.Split(pools, "---\n") {
		apply(kube.MachineConfigPools, doc)
	}
	apply(pki.Infrastructures, "apiVersion: config.openshift.io/v1\nkind: Infrastructure\nmetadata: {name: cluster}\nspec: {}\n")
	infra, err := dyn.Resource(pki.Infrastructures).Get(ctx, "cluster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	infra.Object["status"] = map[string]any{"apiServerInternalURI": "https://localhost:6443", "infrastructureName": "test",
		"platformStatus": map[string]any{"type": "BareMetal", "baremetal": map[string]any{"apiServerInternalIPs": []any{"127.0.0.1"}}}}
	if _, err := dyn.Resource(pki.Infrastructures).UpdateStatus(ctx, infra, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, kc
}

// mountSecret copies a Secret's tls.crt and tls.key to files as the kubelet
// does for a mounted Secret (key first, then the certificate the server
// watches), on each change an informer sees, until the test ends.
func mountSecret(t *testing.T, kc kubernetes.Interface, name, certFile, keyFile string) {
	t.Helper()
	written := make(chan struct{})
	var once sync.Once
	var last []byte
	write := func(o any) { // an informer calls its handlers one at a time
		s, ok := o.(*corev1.Secret)
		if !ok || bytes.Equal(s.Data["tls.crt"], last) {
			return
		}
		last = s.Data["tls.crt"]
		_ = os.WriteFile(keyFile, s.Data["tls.key"], 0o600)
		_ = os.WriteFile(certFile, s.Data["tls.crt"], 0o600)
		once.Do(func() { close(written) })
	}
	f := informers.NewSharedInformerFactoryWithOptions(kc, 0, informers.WithNamespace(mcoNS),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name }))
	if _, err := f.Core().V1().Secrets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: write, UpdateFunc: func(_, o any) { write(o) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	f.Start(stop)
	t.Cleanup(func() { close(stop); f.Shutdown() })
	select {
	case <-written:
	case <-time.After(time.Minute):
		t.Fatalf("no secret %s within a minute", name)
	}
}

// pointerCA is the CA bundle the pointer config in a user-data Secret
// trusts.
func pointerCA(t *testing.T, kc kubernetes.Interface, name string) []byte {
	t.Helper()
	s := kubetest.Get(t, kc.CoreV1().Secrets(mapiNS), name)
	p, err := convert.Parse(s.Data["userData"])
	if err != nil || len(p.Config.Ignition.Security.TLS.CertificateAuthorities) != 1 {
		t.Fatalf("%s: %s %v", name, s.Data["userData"], err)
	}
	du, err := dataurl.DecodeString(*p.Config.Ignition.Security.TLS.CertificateAuthorities[0].Source)
	if err != nil {
		t.Fatal(err)
	}
	return du.Data
}

// rehearsalClients are three boot-image eras: spec 3.6, 3.2 and spec 2.
func rehearsalClients(t *testing.T) []ignclient.Client {
	return []ignclient.Client{ignclient.Get(t, "v2.27.0"), ignclient.Get(t, "v2.9.0"), ignclient.Get(t, "v0.35.0")}
}

// bootWith starts a node of each era trusting ca.
func bootWith(ti *tlsInstance, clients []ignclient.Client, ca []byte, total time.Duration) map[string]*ignclient.Running {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	_ = cancel // the node's run ends with its own timeout; ctx bounds a hang
	runs := map[string]*ignclient.Running{}
	for _, c := range clients {
		runs[c.Version] = ignclient.Start(ctx, c, ti.tlsBase+"/config/worker", ignclient.Options{CA: ca, HTTPTotal: total})
	}
	return runs
}

// rehearsal is a cluster whose PKI the controller's component keeps, with
// the installer's pointer config (trusting the first CA) in
// worker-user-data and an ISO's in bare-metal-iso (two CA entries: left
// alone), and mcs serving the machine-config-server-tls Secret as a
// kubelet mounts it.
type rehearsal struct {
	kubeconfig string
	kc         kubernetes.Interface
	ti         *tlsInstance
	old        []byte // the first CA, as the installer's pointer config trusts it
}

// rehearsalCALife is the first CA's: the steps that need it valid (four
// rounds of boots and a rotation) took 10-12 s at load 20, and the test
// logs the margin left; the rest of it is the test waiting.
const rehearsalCALife = 75 * time.Second

func startRehearsal(t *testing.T, ctx context.Context) *rehearsal {
	kubeconfig, kc := pkiCluster(t)
	rc, _ := kube.RESTConfig(kubeconfig)
	stop, err := startPKI(ctx, pkiOptions{manage: true, resync: time.Hour, lifetimes: pki.Lifetimes{
		CAValidity: rehearsalCALife, CARefresh: rehearsalCALife - time.Second, CertValidity: time.Hour, CertRefresh: 50 * time.Minute}}, rc, kubetest.Logger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	var bundle *corev1.ConfigMap
	waitFor(t, "the CA bundle", func() bool {
		bundle, err = kc.CoreV1().ConfigMaps(mcoNS).Get(ctx, "machine-config-server-ca", metav1.GetOptions{})
		return err == nil
	})
	// The first pass writes the pools' pointer configs last: a rotation
	// reading before them would create them again ("already exists").
	waitFor(t, "the first pass's pointer configs", func() bool {
		for _, pool := range []string{"worker", "infra"} {
			if _, err := kc.CoreV1().Secrets(mapiNS).Get(ctx, pool+"-user-data-managed", metav1.GetOptions{}); err != nil {
				return false
			}
		}
		return true
	})
	r := &rehearsal{kubeconfig: kubeconfig, kc: kc, old: []byte(bundle.Data["ca-bundle.crt"])}
	ca := `{"source":"` + dataurl.EncodeBytes(r.old) + `"}`
	for name, cas := range map[string]string{"worker-user-data": ca, "bare-metal-iso": ca + "," + ca} {
		userData := `{"ignition":{"version":"3.1.0","config":{"merge":[{"source":"https://127.0.0.1:22623/config/worker"}]},"security":{"tls":{"certificateAuthorities":[` + cas + `]}}}}`
		if _, err := kc.CoreV1().Secrets(mapiNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string][]byte{"userData": []byte(userData)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	writeFile(t, dir, "pools.yaml", pools)
	writeFile(t, dir, "50-worker-hello.yaml", workerMC("rehearsal"))
	tlsDir := t.TempDir()
	r.ti = &tlsInstance{certFile: filepath.Join(tlsDir, "tls.crt"), keyFile: filepath.Join(tlsDir, "tls.key")}
	mountSecret(t, kc, "machine-config-server-tls", r.ti.certFile, r.ti.keyFile)
	r.ti.instance = start(t, "--dir", dir, "--listen-plain", "127.0.0.1:0", "--listen-tls", "127.0.0.1:0",
		"--cert", r.ti.certFile, "--key", r.ti.keyFile, "--poll", "50ms", "--debounce", "20ms")
	r.ti.tlsBase = r.ti.tlsURL(t)
	return r
}

// The rotation rehearsal: real clients of three eras boot with the
// installer's pointer config before, during and after `mcs pki rotate
// --confirm`, and with the rewritten one after; no server restart. Once
// the first CA expires, the old pointer config is refused at TLS, as
// /status and `mcs pki status` said beforehand, and the new one still boots.
func TestRotationRehearsal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := startRehearsal(t, ctx)
	ti, clients := r.ti, rehearsalClients(t)

	t.Log("before the rotation: the installer's pointer config")
	bootedWith(t, bootWith(ti, clients, r.old, 0))

	t.Log("during: nodes booting while the CA rotates")
	during := bootWith(ti, clients, r.old, 0)
	var out, errb syncbuf.Buffer
	if err := dispatch(ctx, []string{"pki", "rotate", "--confirm", "--kubeconfig", r.kubeconfig, "--pki-ca-validity", "1h", "--pki-ca-refresh", "50m",
		"--pki-cert-validity", "1h", "--pki-cert-refresh", "50m"}, nil, &out, &errb); err != nil {
		t.Fatalf("mcs pki rotate --confirm: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "changed: update secret "+mcoNS+"/machine-config-server-ca") {
		t.Errorf("rotate said:\n%s", out.String())
	}
	bootedWith(t, during)

	t.Log("after: the installer's pointer config and the rewritten one")
	waitFor(t, "the rewritten pointer config", func() bool { return !bytes.Equal(pointerCA(t, r.kc, "worker-user-data"), r.old) })
	bundle := pointerCA(t, r.kc, "worker-user-data")
	waitFor(t, "the new serving certificate served", func() bool { return len(tlsStatusOf(t, ti).Trust) == 2 })
	if tr := tlsStatusOf(t, ti).Trust; !slices.ContainsFunc(tr, func(x status.Trust) bool { return x.CA == firstCN(t, r.old) && !x.Expired }) {
		t.Errorf("/status before expiry does not show the old CA %s trusted: %+v", firstCN(t, r.old), tr)
	}
	// Spec-2 (and 3.0, 3.1) boot images read only the first certificate of
	// the bundle: it must be the CA that signs what is served.
	if first, issuer := firstCN(t, bundle), tlsStatusOf(t, ti).Issuer; first != issuer {
		t.Errorf("the rewritten pointer config leads with %q, not the serving certificate's issuer %q", first, issuer)
	}
	bootedWith(t, bootWith(ti, clients, r.old, 0))
	bootedWith(t, bootWith(ti, clients, bundle, 0))

	first := saysUntil(t, r, ctx)
	// The margin says how close a slow machine came to the first CA's
	// expiry before the steps that need it were done.
	t.Logf("after the first CA expires (%s, %s from now)", first.Format(time.RFC3339), time.Until(first).Round(time.Second))
	// Real Ignition clients check expiry on the machine's clock, as mcs
	// does for /status: the old CA shown expired, or gone from the served
	// chain where the serving certificate was re-read without its
	// cross-signature since, it has expired for the clients too. /status
	// must not stop trusting it before it expires, nor keep trusting it
	// long after.
	oldCA := firstCN(t, r.old)
	testkit.Eventually(t, time.Until(first)+30*time.Second, "/status no longer trusting "+oldCA, func() error {
		for _, tr := range tlsStatusOf(t, ti).Trust {
			if tr.CA == oldCA && !tr.Expired {
				return fmt.Errorf("still trusted: %+v", tr)
			}
		}
		return nil
	})
	if now := time.Now(); now.Before(first) {
		t.Errorf("/status stopped trusting %s at %s, before it expires at %s", oldCA, now.Format(time.RFC3339Nano), first.Format(time.RFC3339))
	}
	for v, run := range bootWith(ti, clients, r.old, 5*time.Second) {
		res, err := run.Wait()
		if err == nil || res == nil || !strings.Contains(res.Log, "certificate") {
			t.Errorf("%s booted with an expired CA's pointer config (%v)", v, err)
		}
		if res != nil {
			os.RemoveAll(res.Dir)
		}
	}
	bootedWith(t, bootWith(ti, clients, bundle, 0))
}

// saysUntil checks that /status and `mcs pki status` say, before it
// happens, until when a pointer config trusting only the first CA works,
// and returns that moment.
func saysUntil(t *testing.T, r *rehearsal, ctx context.Context) time.Time {
	t.Helper()
	st := tlsStatusOf(t, r.ti)
	first := st.Trust[1]
	if first.Expired || time.Until(first.Until) > rehearsalCALife || !strings.Contains(first.Via, "cross-signature") {
		t.Fatalf("/status tls.trust before the old CA expires: %+v", st.Trust)
	}
	var status, errb bytes.Buffer
	if err := dispatch(ctx, []string{"pki", "status", "--kubeconfig", r.kubeconfig}, nil, &status, &errb); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	if !regexp.MustCompile(`bare-metal-iso .*boots nodes until ` + first.Until.UTC().Format(time.RFC3339)).MatchString(status.String()) {
		t.Errorf("mcs pki status does not say until when the ISO's pointer config works (%s):\n%s", first.Until.UTC().Format(time.RFC3339), status.String())
	}
	return first.Until
}

// firstCN is the common name of the first certificate of a PEM bundle.
func firstCN(t *testing.T, bundle []byte) string {
	t.Helper()
	b, _ := pem.Decode(bundle)
	if b == nil {
		t.Fatalf("no PEM in %q", bundle)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.Subject.CommonName
}

func tlsStatusOf(t *testing.T, ti *tlsInstance) *status.TLSStatus {
	t.Helper()
	_, b, err := ti.get("/status", "Accept", "application/json")
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ TLS *status.TLSStatus }
	if err := json.Unmarshal(b, &st); err != nil || st.TLS == nil {
		t.Fatalf("/status: %.300s %v", b, err)
	}
	return st.TLS
}

func bootedWith(t *testing.T, runs map[string]*ignclient.Running) {
	t.Helper()
	for v, run := range runs {
		res := run.Booted(t)
		if b, err := res.ReadFile("/etc/hello"); err != nil || string(b) != "rehearsal" {
			t.Errorf("%s: /etc/hello %q %v", v, b, err)
		}
	}
}

// Pool tokens from the controller's Secrets: the worker token fetches
// worker and is refused infra; a rotated token works through its grace and
// not after; a deleted pool's token stops at once.
func TestPoolTokenSecrets(t *testing.T) {
	kubeconfig, kc := pkiCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rc, _ := kube.RESTConfig(kubeconfig)
	const rotation, grace = 6 * time.Second, 3 * time.Second
	stop, err := startPKI(ctx, pkiOptions{manage: true, resync: 500 * time.Millisecond, lifetimes: pki.DefaultLifetimes,
		tokens: pki.TokenPolicy{Rotation: rotation, Grace: grace}}, rc, kubetest.Logger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	token := func(pool string) string {
		s, err := kc.CoreV1().Secrets(mcoNS).Get(ctx, "mcs-pool-token-"+pool, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return string(s.Data["token"])
	}
	waitFor(t, "pool tokens", func() bool { return token("worker") != "" && token("infra") != "" })
	dir := t.TempDir()
	writeFile(t, dir, "pools.yaml", pools)
	writeFile(t, dir, "50-worker-hello.yaml", workerMC("scoped"))
	writeFile(t, dir, "60-infra.yaml", strings.Replace(mc("infra-part", "infra-1"), "role: worker", "role: infra", 1))
	in := start(t, "--dir", dir, "--listen-plain", "127.0.0.1:0", "--listen-tls", "", "--poll", "50ms", "--debounce", "20ms",
		"--pool-token-secrets", "--kubeconfig", kubeconfig, "--listen-admin", "127.0.0.1:0")
	code := func(pool, tok string) int {
		c, _, err := in.get("/config/"+pool, "Authorization", "Bearer "+tok)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	w1 := token("worker")
	waitFor(t, "worker's token fetches worker", func() bool { return code("worker", w1) == 200 })
	if c := code("infra", w1); c != 511 {
		t.Errorf("worker's token fetching infra: %d", c)
	}
	// The server learns a token through its informer, after the Secret:
	// infra's may have just rotated.
	i1 := token("infra")
	waitFor(t, "infra's token fetches infra", func() bool { return code("infra", i1) == 200 })
	adminOnlyWithAllPools(t, in, w1)
	waitFor(t, "worker's token rotated", func() bool { return token("worker") != w1 })
	sec, err := kc.CoreV1().Secrets(mcoNS).Get(ctx, "mcs-pool-token-worker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rotatedAt, err := time.Parse(time.RFC3339Nano, sec.Annotations["mcs.openshift.io/token-rotated-at"])
	if err != nil || string(sec.Data["previous"]) != w1 {
		t.Fatalf("rotated-at %q (%v), previous is w1: %v", sec.Annotations["mcs.openshift.io/token-rotated-at"], err, string(sec.Data["previous"]) == w1)
	}
	if c := code("worker", w1); c != 200 {
		t.Errorf("the rotated-out token within its grace: %d", c)
	}
	w2 := token("worker")
	waitFor(t, "the new token accepted", func() bool { return code("worker", w2) == 200 })
	waitFor(t, "the grace ends", func() bool { return code("worker", w1) == 511 })
	if d := time.Since(rotatedAt); d < grace-time.Second {
		t.Errorf("the old token stopped %s after the rotation, before its %s grace", d, grace)
	}
	inf := token("infra")
	deleted := time.Now()
	if err := dynamic.NewForConfigOrDie(rc).Resource(kube.MachineConfigPools).Delete(ctx, "infra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted pool's token refused", func() bool { return code("infra", inf) == 511 })
	took := time.Since(deleted)
	t.Logf("deleted pool's token refused %s after the delete", took.Round(time.Millisecond))
	if took > 10*time.Second { // two informers and a Secret's delete; ~1 s idle
		t.Errorf("the deleted pool's token worked for %s", took)
	}
}

// adminOnlyWithAllPools checks that /status and /metrics refuse a pool's
// token on the nodes' listener and answer without one on --listen-admin.
func adminOnlyWithAllPools(t *testing.T, in *instance, poolToken string) {
	t.Helper()
	admin := regexp.MustCompile(`listening on (http://\S+) \(admin`).FindStringSubmatch(in.stdout.String())
	if admin == nil {
		t.Fatalf("no admin listener:\n%s", in.stdout.String())
	}
	for _, path := range []string{"/status", "/metrics"} {
		if c, _, _ := in.get(path, "Authorization", "Bearer "+poolToken); c != 401 {
			t.Errorf("%s with a pool's token: %d", path, c)
		}
		if resp, err := http.Get(admin[1] + path); err != nil || resp.StatusCode != 200 {
			t.Errorf("%s on --listen-admin: %v %v", path, resp, err)
		} else {
			resp.Body.Close()
		}
	}
}

// A pki pass that fails says first what it wrote before failing, then
// the error, as it was.
func TestPKIFailedShowsChanges(t *testing.T) {
	failed := fmt.Errorf("writing the bundle: conflict")
	report := &pki.Report{Changes: []string{"update secret ns/ca: new CA"}}
	for _, tc := range []struct {
		name string
		dry  bool
		want string
	}{
		{"confirmed", false, "changed: update secret ns/ca: new CA\n"},
		{"dry run", true, "would change: update secret ns/ca: new CA\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := pkiFailed(&out, report, failed, tc.dry); err != failed || out.String() != tc.want {
				t.Errorf("printed %q, returned %v", out.String(), err)
			}
			if err := pkiFailed(&out, nil, failed, tc.dry); err != failed {
				t.Errorf("no report: %v", err)
			}
		})
	}
}

package pki

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/source/kube"
)

var shared = &kubetest.Shared{}

func TestMain(m *testing.M) { shared.Main(m, "pki", true, nil) }

// cluster0 makes the namespaces, the Infrastructure and pools of a cluster
// the manager can run against, and returns its clients.
func cluster0(t *testing.T, pools ...string) Clients {
	t.Helper()
	cp := shared.Need(t)
	ctx := context.Background()
	c := Clients{Kube: cp.Kube, Dynamic: cp.Dynamic}
	for _, ns := range []string{mcoNamespace, mapiNamespace} {
		_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, ns := range []string{mcoNamespace, mapiNamespace} {
			_ = c.Kube.CoreV1().Secrets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			_ = c.Kube.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		}
		_ = c.Dynamic.Resource(Infrastructures).Delete(ctx, "cluster", metav1.DeleteOptions{})
		cp.DeleteAll(t, kube.MachineConfigPools)
	})
	infra := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure", "metadata": map[string]any{"name": "cluster"}, "spec": map[string]any{}}}
	got, err := c.Dynamic.Resource(Infrastructures).Create(ctx, infra, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Object["status"] = map[string]any{"apiServerInternalURI": "https://api-int.test.example:6443", "infrastructureName": "test",
		"platformStatus": map[string]any{"type": "BareMetal", "baremetal": map[string]any{"apiServerInternalIPs": []any{"127.0.0.1"}}}}
	if _, err := c.Dynamic.Resource(Infrastructures).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pools {
		cp.Apply(t, kubetest.Pool(t, p))
	}
	return c
}

func putSecret(t *testing.T, c Clients, s *corev1.Secret) *corev1.Secret {
	t.Helper()
	got, err := c.Kube.CoreV1().Secrets(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func userData(name string, labels map[string]string, data string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: mapiNamespace, Labels: labels},
		Data: map[string][]byte{userDataKey: []byte(data)}}
}

// A cluster's existing CA is adopted (kept, not replaced), the installer's
// pointer config is rewritten with the bundle, the Secrets upstream's
// rules leave alone keep their resourceVersion, and each pool gets a
// pointer config no newer than its boot image reads, with its token.
func TestManagerAdoptsAndRewrites(t *testing.T) {
	c := cluster0(t, "worker")
	ctx := context.Background()
	now := time.Now()
	installer, err := newSigner(now.Add(-time.Hour), 3*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := encodeKey(installer.key)
	putSecret(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: signerName, Namespace: mcoNamespace}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": encodeCerts(installer.cert), "tls.key": key}})
	caURL := "data:text/plain;charset=utf-8;base64,AAAA"
	putSecret(t, c, userData("worker-user-data", nil, string(pointerJSON(t, caURL))))
	kept := map[string]*corev1.Secret{
		"two-cas":           putSecret(t, c, userData("two-cas", nil, string(pointerJSON(t, caURL, caURL)))),
		"managed-elsewhere": putSecret(t, c, userData("managed-elsewhere", map[string]string{managedLabel: ""}, string(pointerJSON(t, caURL)))),
		"cloud-init":        putSecret(t, c, userData("cloud-init", nil, "#cloud-config\n")),
	}
	m, err := New(Config{Clients: c, Lifetimes: Lifetimes{CAValidity: 3 * time.Hour, CARefresh: 2 * time.Hour, CertValidity: time.Hour, CertRefresh: 40 * time.Minute},
		Tokens: TokenPolicy{Rotation: time.Hour, Grace: time.Minute}, Logger: kubetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Sync(ctx, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.CA == nil || r.CA.Subject != installer.cert.Subject.CommonName {
		t.Fatalf("the existing CA was not adopted: %+v (changes %v)", r.CA, r.Changes)
	}
	if r.Serving == nil || !strings.Contains(strings.Join(r.Serving.Hosts, ","), "api-int.test.example") || !strings.Contains(strings.Join(r.Serving.Hosts, ","), "127.0.0.1") {
		t.Errorf("serving certificate hosts: %+v", r.Serving)
	}
	bundle := kubetest.Get(t, c.Kube.CoreV1().ConfigMaps(mcoNamespace), bundleName).Data[bundleKey]
	w := kubetest.Get(t, c.Kube.CoreV1().Secrets(mapiNamespace), "worker-user-data")
	if p, _ := readPointer(w.Data[userDataKey]); len(p.CAs) != 1 || !p.CAs[0].Equal(installer.cert) || !strings.Contains(bundle, string(encodeCerts(installer.cert))) {
		t.Errorf("worker-user-data not rewritten with the bundle: %s", w.Data[userDataKey])
	}
	for name, old := range kept {
		if s := kubetest.Get(t, c.Kube.CoreV1().Secrets(mapiNamespace), name); s.ResourceVersion != old.ResourceVersion {
			t.Errorf("%s was rewritten", name)
		}
	}
	managed := kubetest.Get(t, c.Kube.CoreV1().Secrets(mapiNamespace), "worker-user-data-managed")
	tok := kubetest.Get(t, c.Kube.CoreV1().Secrets(mcoNamespace), tokenSecretName("worker"))
	p, err := readPointer(managed.Data[userDataKey])
	if err != nil || p.Version != "3.1.0" || p.Pool != "worker" || !strings.Contains(string(managed.Data[userDataKey]), "Bearer "+string(tok.Data[tokenKey])) {
		t.Errorf("generated pointer %s: %+v %v", managed.Data[userDataKey], p, err)
	}
	if !strings.Contains(string(managed.Data[userDataKey]), "https://127.0.0.1:22623/config/worker") {
		t.Errorf("bare metal pointer configs fetch from the first API VIP: %s", managed.Data[userDataKey])
	}
	if r2, err := m.Sync(ctx, false, false); err != nil || len(r2.Changes) != 0 {
		t.Errorf("a second pass changed %v (%v)", r2.Changes, err)
	}
}

// Forced rotation: a new CA cross-signed by the old, both in the bundle and
// in the rewritten pointer configs, the serving chain carrying the
// cross-signature; the token of a deleted pool goes at once.
func TestManagerRotateAndRevoke(t *testing.T) {
	c := cluster0(t, "worker", "infra")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, err := New(Config{Clients: c, Lifetimes: Lifetimes{CAValidity: time.Hour, CARefresh: 40 * time.Minute, CertValidity: time.Hour, CertRefresh: 40 * time.Minute},
		Tokens: TokenPolicy{Rotation: time.Hour, Grace: time.Minute}, Resync: time.Hour, Logger: kubetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	r0, err := m.Sync(ctx, false, false)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := m.Sync(ctx, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if r1.CA.SHA256 == r0.CA.SHA256 || len(r1.Bundle) != 2 || len(r1.Chain) != 1 || r1.Chain[0].Issuer != r0.CA.Subject {
		t.Fatalf("rotation: CA %v → %v, bundle %d, chain %+v", r0.CA.Subject, r1.CA.Subject, len(r1.Bundle), r1.Chain)
	}
	serving := kubetest.Get(t, c.Kube.CoreV1().Secrets(mcoNamespace), servingName)
	if certs, _ := parseCerts(serving.Data["tls.crt"]); len(certs) != 2 || !certs[1].IsCA {
		t.Errorf("served chain: %d certificates", len(certs))
	}
	go m.run(ctx)
	if err := c.Dynamic.Resource(kube.MachineConfigPools).Delete(ctx, "infra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 20*time.Second, "infra's token deleted", func() error {
		_, err := c.Kube.CoreV1().Secrets(mcoNamespace).Get(ctx, tokenSecretName("infra"), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// hooked is c with hook called before each of its Kubernetes client's
// requests is sent: a test's other writer, acting between two of a pass's
// requests.
func hooked(t *testing.T, c Clients, hook func(*http.Request)) Clients {
	cfg := rest.CopyConfig(shared.Need(t).Admin)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			hook(r)
			return rt.RoundTrip(r)
		})
	})
	return Clients{Kube: kubernetes.NewForConfigOrDie(cfg), Dynamic: c.Dynamic}
}

// A pass whose reads straddle another writer's rotation (`mcs pki rotate`
// beside the controller: the signer read before it, the serving Secret
// after) must not write from that mix: the serving certificate keeps its
// cross-signature and the bundle leads with the new CA.
func TestSyncAcrossAnotherRotation(t *testing.T) {
	c := cluster0(t, "worker")
	ctx := context.Background()
	now := time.Now()
	clock := func() time.Time { return now }
	lt := Lifetimes{CAValidity: time.Hour, CARefresh: 40 * time.Minute, CertValidity: time.Hour, CertRefresh: 40 * time.Minute}
	rotator, err := New(Config{Clients: c, Lifetimes: lt, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	straddled := hooked(t, c, func(r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/secrets/"+servingName) {
			once.Do(func() {
				if _, err := rotator.Sync(ctx, true, false); err != nil {
					t.Errorf("the other writer's rotation: %v", err)
				}
			})
		}
	})
	m, err := New(Config{Clients: straddled, Lifetimes: lt, Now: clock, Logger: kubetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rotator.Sync(ctx, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Sync(ctx, false, false); err != nil {
		t.Fatal(err)
	}
	signer := kubetest.Get(t, c.Kube.CoreV1().Secrets(mcoNamespace), signerName)
	ca, _ := parseCerts(signer.Data["tls.crt"])
	serving := kubetest.Get(t, c.Kube.CoreV1().Secrets(mcoNamespace), servingName)
	if certs, _ := parseCerts(serving.Data["tls.crt"]); len(certs) != 2 || !certs[1].IsCA || certs[0].Issuer.CommonName != ca[0].Subject.CommonName {
		t.Errorf("served after the rotation: %d certificates, want %s's certificate and its cross-signature", len(certs), ca[0].Subject.CommonName)
	}
	bundle := kubetest.Get(t, c.Kube.CoreV1().ConfigMaps(mcoNamespace), bundleName)
	if b, _ := parseCerts([]byte(bundle.Data[bundleKey])); len(b) != 2 || !b[0].Equal(ca[0]) {
		t.Errorf("the bundle (%d CAs) does not lead with the new CA %s", len(b), ca[0].Subject.CommonName)
	}
}

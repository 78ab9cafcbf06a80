package pki

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ignition-mcs/mcs/internal/kubetest"
)

var rotateLifetimes = Lifetimes{CAValidity: time.Hour, CARefresh: 40 * time.Minute, CertValidity: time.Hour, CertRefresh: 40 * time.Minute}

// bump is another writer's change to a managed object (a controller's
// pass writing from what it read before): it moves the resourceVersion
// a pass read.
func bump(t *testing.T, c Clients, resource, name string) {
	t.Helper()
	ctx := context.Background()
	var err error
	switch resource {
	case "configmaps":
		o := kubetest.Get(t, c.Kube.CoreV1().ConfigMaps(mcoNamespace), name)
		o.Annotations = merged(o.Annotations, map[string]string{"test/bump": o.ResourceVersion})
		_, err = c.Kube.CoreV1().ConfigMaps(mcoNamespace).Update(ctx, o, metav1.UpdateOptions{})
	default:
		o := kubetest.Get(t, c.Kube.CoreV1().Secrets(mcoNamespace), name)
		o.Annotations = merged(o.Annotations, map[string]string{"test/bump": o.ResourceVersion})
		_, err = c.Kube.CoreV1().Secrets(mcoNamespace).Update(ctx, o, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Errorf("the other writer: %v", err)
	}
}

// writing is whether r updates the managed object resource/name.
func writing(r *http.Request, resource, name string) bool {
	return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/namespaces/"+mcoNamespace+"/"+resource+"/"+name)
}

// rotation0 is a cluster whose PKI a first pass made, and a manager on
// clients whose requests hook sees first, with a clock now() and passes
// paced at once.
func rotation0(t *testing.T, now func() time.Time, hook func(*http.Request)) (Clients, *Manager, *Report) {
	c := cluster0(t, "worker")
	first, err := New(Config{Clients: c, Lifetimes: rotateLifetimes, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	r0, err := first.Sync(context.Background(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Clients: hooked(t, c, hook), Lifetimes: rotateLifetimes, Now: now, Logger: kubetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	m.after = func(time.Duration) <-chan time.Time {
		ch := make(chan time.Time, 1)
		ch <- time.Time{}
		return ch
	}
	return c, m, r0
}

// A pass that gives up because the objects it read kept changing names
// them.
func TestReadConflictNamesObjects(t *testing.T) {
	var c Clients
	var on bool
	c, m, _ := rotation0(t, time.Now, func(r *http.Request) {
		if on && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/secrets/"+servingName) {
			bump(t, c, "configmaps", bundleName)
		}
	})
	on = true
	_, err := m.Sync(context.Background(), false, false)
	var ce *conflictError
	want := "configmap " + mcoNamespace + "/" + bundleName
	if !errors.As(err, &ce) || strings.Join(ce.Objects, ",") != want || !strings.Contains(err.Error(), want+" changed by someone else") {
		t.Fatalf("got %v, want a conflict naming %s alone", err, want)
	}
}

// `mcs pki rotate` racing a controller pass: the bundle write after the
// new CA's meets the other writer's change. The rotation reads everything
// again and finishes (one new CA, not two; the bundle leading with it; a
// serving certificate from it carrying the cross-signature), and says
// what it met.
func TestRotateFinishesAfterAConflict(t *testing.T) {
	var c Clients
	var once sync.Once
	c, m, r0 := rotation0(t, time.Now, func(r *http.Request) {
		if writing(r, "configmaps", bundleName) {
			once.Do(func() { bump(t, c, "configmaps", bundleName) })
		}
	})
	r, err := m.Sync(context.Background(), true, false)
	if err != nil {
		t.Fatalf("the rotation: %v", err)
	}
	signer := kubetest.Get(t, c.Kube.CoreV1().Secrets(mcoNamespace), signerName)
	ca, _ := parseCerts(signer.Data["tls.crt"])
	if len(ca) != 1 || ca[0].Subject.CommonName == r0.CA.Subject || r.CA.Subject != ca[0].Subject.CommonName {
		t.Fatalf("CA in force %v; before %s, reported %s", ca, r0.CA.Subject, r.CA.Subject)
	}
	caWrites := 0
	for _, ch := range r.Changes {
		if strings.HasPrefix(ch, "update secret "+mcoNamespace+"/"+signerName+":") {
			caWrites++
		}
	}
	if caWrites != 1 {
		t.Errorf("%d CA writes, want 1: %v", caWrites, r.Changes)
	}
	bundle := kubetest.Get(t, c.Kube.CoreV1().ConfigMaps(mcoNamespace), bundleName)
	if b, _ := parseCerts([]byte(bundle.Data[bundleKey])); len(b) != 2 || !b[0].Equal(ca[0]) {
		t.Errorf("the bundle (%d CAs) does not lead with the new CA", len(b))
	}
	serving := kubetest.Get(t, c.Kube.CoreV1().Secrets(mcoNamespace), servingName)
	if certs, _ := parseCerts(serving.Data["tls.crt"]); len(certs) != 2 || certs[0].Issuer.CommonName != ca[0].Subject.CommonName || certs[1].Issuer.CommonName != r0.CA.Subject {
		t.Errorf("served: %d certificates, want one from the new CA and its cross-signature by the old", len(certs))
	}
	if p := strings.Join(r.Problems, "\n"); !strings.Contains(p, "configmap "+mcoNamespace+"/"+bundleName) || !strings.Contains(p, "finished in 2 passes") {
		t.Errorf("the report does not say what the rotation met: %q", p)
	}
}

// A rotation whose writes after the new CA keep meeting other writers'
// changes gives up at its deadline, on its clock, saying that the CA is
// written and what stopped it; one whose CA write itself meets a change
// says nothing was written.
func TestRotateSaysWhatHappened(t *testing.T) {
	for _, c := range []struct {
		name, resource, object, want string
		written                      bool
	}{
		{"after the CA", "configmaps", bundleName, "the CA Secret holds the new CA openshift-machine-config-operator_machine-config-server-ca@", true},
		{"at the bundle", "configmaps", bundleName, "; the bundle and serving certificate do not use it yet: the rotation is unfinished", true},
		{"at the serving certificate", "secrets", servingName, "; the bundle lists it; the serving certificate does not use it yet: the rotation is unfinished", true},
		{"at the CA", "secrets", signerName, "nothing written, the CA in force is unchanged", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			at := time.Now()
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); at = at.Add(7 * time.Second); return at }
			var api Clients
			api, m, r0 := rotation0(t, clock, func(r *http.Request) {
				if writing(r, c.resource, c.object) {
					bump(t, api, c.resource, c.object)
				}
			})
			_, err := m.Sync(context.Background(), true, false)
			var ce *conflictError
			obj := strings.TrimSuffix(c.resource, "s") + " " + mcoNamespace + "/" + c.object
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ce) || ce.Objects[0] != obj {
				t.Fatalf("got %v; want %q and a conflict naming %s", err, c.want, obj)
			}
			var ue *unfinishedError
			if errors.As(err, &ue) != c.written || Unfinished(fmt.Errorf("wrapped: %w", err)) != c.written {
				t.Errorf("unfinished: %v, want %v", ue, c.written)
			}
			signer := kubetest.Get(t, api.Kube.CoreV1().Secrets(mcoNamespace), signerName)
			ca, _ := parseCerts(signer.Data["tls.crt"])
			if replaced := ca[0].Subject.CommonName != r0.CA.Subject; replaced != c.written {
				t.Errorf("CA replaced: %v, want %v", replaced, c.written)
			}
			if c.written && (ue.Passes < 3 || ue.For < finishWithin) {
				t.Errorf("gave up after %d passes in %s, want several over %s", ue.Passes, ue.For, finishWithin)
			}
			t.Log(err)
		})
	}
}

// A rotation whose forced pass wrote the CA and the bundle, met another
// writer at the serving certificate, and whose next pass then failed to
// read (infrastructure/cluster gone: an API blip) says the bundle lists the
// new CA: the progress is the furthest any pass made, not the last pass's.
func TestRotateKeepsFurthestProgress(t *testing.T) {
	var api Clients
	var once sync.Once
	api, m, _ := rotation0(t, time.Now, func(r *http.Request) {
		if writing(r, "secrets", servingName) {
			once.Do(func() {
				bump(t, api, "secrets", servingName)
				if err := api.Dynamic.Resource(Infrastructures).Delete(context.Background(), "cluster", metav1.DeleteOptions{}); err != nil {
					t.Error(err)
				}
			})
		}
	})
	_, err := m.Sync(context.Background(), true, false)
	var ue *unfinishedError
	if !errors.As(err, &ue) || ue.Passes != 2 || !strings.Contains(err.Error(), "; the bundle lists it; the serving certificate does not use it yet:") ||
		!strings.Contains(err.Error(), "infrastructure/cluster") {
		t.Fatalf("got %v; want the bundle said to list the new CA after a failed read in pass 2", err)
	}
}

// A rotation that must replace the CA Secret (its type differs) and whose
// create, after the delete landed, meets another writer's Secret: the
// delete is a change of its own, and Sync does not say nothing was
// written.
func TestRotateReplaceDeleteLanded(t *testing.T) {
	var c Clients
	var on bool
	var once sync.Once
	var theirs *corev1.Secret
	c, m, _ := rotation0(t, time.Now, func(r *http.Request) {
		if on && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/namespaces/"+mcoNamespace+"/secrets") {
			once.Do(func() { theirs = putSecret(t, c, theirs) })
		}
	})
	// The CA as an Opaque Secret: a type is immutable, so recreated.
	signer := kubetest.Get(t, c.Kube.CoreV1().Secrets(mcoNamespace), signerName)
	if err := c.Kube.CoreV1().Secrets(mcoNamespace).Delete(context.Background(), signerName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	theirs = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: signerName, Namespace: mcoNamespace}, Type: corev1.SecretTypeOpaque, Data: signer.Data}
	putSecret(t, c, theirs.DeepCopy())
	on = true
	r, err := m.Sync(context.Background(), true, false)
	var ce *conflictError
	if err == nil || strings.Contains(err.Error(), "nothing written") || !strings.Contains(err.Error(), "the CA Secret was deleted") || !errors.As(err, &ce) {
		t.Fatalf("got %v; want the CA Secret's delete said, and the conflict", err)
	}
	want := "delete secret " + mcoNamespace + "/" + signerName + ":"
	if r == nil || !slices.ContainsFunc(r.Changes, func(s string) bool { return strings.HasPrefix(s, want) }) {
		t.Errorf("changes %v, want one starting %q", r.Changes, want)
	}
	t.Log(err)
}

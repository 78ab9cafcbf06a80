package pki

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

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
// clients whose requests hook sees first, with a clock now().
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

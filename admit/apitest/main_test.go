// Package apitest runs the admission webhook beside a real kube-apiserver and etcd, which call it over TLS as a cluster's would.
package apitest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/testpki"
)

var shared = &kubetest.Shared{}

func TestMain(m *testing.M) { shared.Main(m, "admit", false, nil) }

// timeoutSeconds is the webhook's: the API server gives up on it after this.
// It is the deployed manifest's (deploy/openshift/admit/webhook.yaml): with
// 2 s, a review under -race on a loaded machine outran it and the write was
// stored as sent, which failed TestRenderApplyLoopNoOp.
const timeoutSeconds = 5

var machineConfigs = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"}

// webhookServer is the webhook serving the shared control plane over TLS
// on 127.0.0.1, registered by a MutatingWebhookConfiguration. What it
// answers with can be swapped (a webhook with other settings, garbage, a
// stall), and it can be stopped and started again on the same address.
type webhookServer struct {
	cp                *kubetest.ControlPlane
	ca                *testpki.CA
	certFile, keyFile string
	addr              string
	handler           atomic.Pointer[http.Handler]
	reloaded          chan string // serials of reloaded certificates
	mu                sync.Mutex
	stop              func() // stops serving; nil when stopped
}

var (
	serverOnce sync.Once
	server     *webhookServer
	serverErr  error
)

// setup starts the webhook (once per package) and returns it serving the
// default webhook: warn, no ceiling.
func setup(t *testing.T) *webhookServer {
	t.Helper()
	cp := shared.Need(t)
	serverOnce.Do(func() { server, serverErr = start(t, cp) })
	if serverErr != nil {
		t.Fatal(serverErr)
	}
	server.use(admit.New(admit.Config{Logger: kubetest.Logger(t)}))
	t.Cleanup(func() { server.use(admit.New(admit.Config{})) })
	return server
}

func start(t *testing.T, cp *kubetest.ControlPlane) (*webhookServer, error) {
	dir, err := os.MkdirTemp("", "mcs-admit-test")
	if err != nil {
		return nil, err
	}
	s := &webhookServer{cp: cp, ca: testpki.NewCA(t), certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key"), reloaded: make(chan string, 4)}
	pair := s.ca.Serving(t)
	if err := s.writePair(pair); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.addr = ln.Addr().String()
	s.use(admit.New(admit.Config{}))
	s.serve(ln)
	if err := s.register(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *webhookServer) writePair(p testpki.Pair) error {
	if err := os.WriteFile(s.keyFile+".new", p.KeyPEM, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(s.certFile+".new", p.CertPEM, 0o600); err != nil {
		return err
	}
	if err := os.Rename(s.keyFile+".new", s.keyFile); err != nil {
		return err
	}
	return os.Rename(s.certFile+".new", s.certFile)
}

// use has the server answer with h from the next request on. A *Webhook
// given is made ready with no ceiling unless it has one.
func (s *webhookServer) use(h http.Handler) {
	if w, ok := h.(*admit.Webhook); ok {
		w.SetCeiling(admit.Ceiling{Source: "test: none"})
	}
	s.handler.Store(&h)
}

func (s *webhookServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	(*s.handler.Load()).ServeHTTP(rw, r)
}

// serve serves on ln until down.
func (s *webhookServer) serve(ln net.Listener) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = admit.ServeTLS(ctx, ln, s, admit.TLSConfig{CertFile: s.certFile, KeyFile: s.keyFile, OnReload: func(c tls.Certificate) {
			if leaf := c.Leaf; leaf != nil {
				s.reloaded <- leaf.SerialNumber.String()
			} else {
				s.reloaded <- ""
			}
		}})
	}()
	s.mu.Lock()
	s.stop = func() { cancel(); <-done }
	s.mu.Unlock()
}

// down stops the server: the address refuses connections.
func (s *webhookServer) down() {
	s.mu.Lock()
	stop := s.stop
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// up serves again on the same address.
func (s *webhookServer) up(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		t.Fatalf("listening again on %s: %v", s.addr, err)
	}
	s.serve(ln)
}

// register installs the MutatingWebhookConfiguration as the deployment's:
// MachineConfig CREATE and UPDATE, failurePolicy Ignore.
func (s *webhookServer) register() error {
	url := "https://" + s.addr + admit.MutatePath
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNoneOnDryRun
	timeout := int32(timeoutSeconds)
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "mcs-admit"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "machineconfigs.admit.mcs.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: s.ca.PEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{machineConfigs.Group}, APIVersions: []string{"v1"}, Resources: []string{"machineconfigs"}}}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	_, err := s.cp.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(context.Background(), cfg, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("registering the webhook: %w", err)
	}
	// The API server reads webhook configurations through an informer:
	// written, it is in force a moment later.
	var probes int
	var lastErr error
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		probes++
		stored, err := createConfig(s.cp.Dynamic, fmt.Sprintf("probe-%d", probes), `{"ignition":{"version":"3.5.0"}}`)
		if lastErr = err; err != nil || storedVersion(stored) != "3.0.0" {
			return false, nil
		}
		return true, s.cp.Dynamic.Resource(machineConfigs).Delete(ctx, stored.GetName(), metav1.DeleteOptions{})
	})
	if wait.Interrupted(err) {
		return errors.Join(errors.New("the webhook was not called within 30s"), lastErr)
	}
	return err
}

// createConfig creates a MachineConfig whose spec.config is config.
func createConfig(d dynamic.Interface, name, config string) (*unstructured.Unstructured, error) {
	var cfg map[string]any
	if err := json.Unmarshal([]byte(config), &cfg); err != nil {
		return nil, err
	}
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"machineconfiguration.openshift.io/role": "worker"}},
		"spec":     map[string]any{"config": cfg},
	}}
	return d.Resource(machineConfigs).Create(context.Background(), o, metav1.CreateOptions{})
}

// configOf is an object's spec.config as JSON (keys sorted, as stored).
func configOf(o *unstructured.Unstructured) []byte {
	c, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "config")
	b, _ := json.Marshal(c)
	return b
}

func storedVersion(o *unstructured.Unstructured) string {
	v, _, _ := unstructured.NestedString(o.Object, "spec", "config", "ignition", "version")
	return v
}

// warnings collects the warnings the API server returns.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	w.list = append(w.list, text)
	w.mu.Unlock()
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// client is a dynamic client as user (empty: the admin), collecting the
// warnings it is sent.
func client(t *testing.T, cp *kubetest.ControlPlane, user string) (dynamic.Interface, *warnings) {
	t.Helper()
	rc := rest.CopyConfig(cp.Admin)
	w := &warnings{}
	rc.WarningHandler = w
	if user != "" {
		// RBAC is not under test: each user may write MachineConfigs.
		rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters", "system:authenticated"}}
	}
	d, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return d, w
}

// jsonCanonical is JSON as the API server stores it: keys sorted.
func jsonCanonical(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func ptr(h http.Handler) *http.Handler { return &h }

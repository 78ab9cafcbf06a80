package apitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/internal/kubetest"
)

var clusterVersions = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}

// history is a ClusterVersion status.history, newest first: "4.19.2" or
// "4.19.2/Partial".
func history(versions ...string) []any {
	var out []any
	for _, v := range versions {
		version, state, ok := strings.Cut(v, "/")
		if !ok {
			state = "Completed"
		}
		out = append(out, map[string]any{
			"version": version, "state": state, "image": "quay.io/openshift-release-dev/ocp-release:" + version,
			"startedTime": "2026-11-01T00:00:00Z", "completionTime": "2026-11-01T01:00:00Z", "verified": true,
		})
	}
	return out
}

func setHistory(t *testing.T, s *webhookServer, versions ...string) {
	t.Helper()
	res := s.cp.Dynamic.Resource(clusterVersions)
	cv, err := res.Get(context.Background(), "version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cv.Object["status"] = map[string]any{
		"availableUpdates": nil, "observedGeneration": int64(1), "versionHash": "x",
		"desired": map[string]any{"version": strings.Split(versions[0], "/")[0], "image": "quay.io/x"},
		"history": history(versions...),
	}
	if _, err := res.UpdateStatus(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// installClusterVersion installs OpenShift's ClusterVersion CRD and the
// cluster's "version".
func installClusterVersion(t *testing.T, s *webhookServer) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openshift/api").Output()
	if err != nil {
		t.Fatal(err)
	}
	s.cp.ApplyFiles(t, filepath.Join(strings.TrimSpace(string(out)), "config", "v1", "zz_generated.crd-manifests", "0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml"))
	cv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
		"metadata": map[string]any{"name": "version"},
		"spec":     map[string]any{"clusterID": "6a7b8c9d-0000-4000-8000-000000000000"},
	}}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	t.Cleanup(func() {
		// Gone again, the next test (or run) sees a bare API server.
		_ = s.cp.Dynamic.Resource(crds).Delete(context.Background(), "clusterversions.config.openshift.io", metav1.DeleteOptions{})
		kubetest.Eventually(t, 30*time.Second, "the ClusterVersion CRD gone", func() error {
			if _, err := s.cp.Dynamic.Resource(clusterVersions).List(context.Background(), metav1.ListOptions{}); err == nil {
				return errors.New("still served")
			}
			return nil
		})
	})
	kubetest.Eventually(t, 30*time.Second, "the ClusterVersion CRD served", func() error {
		_, err := s.cp.Dynamic.Resource(clusterVersions).Create(context.Background(), cv, metav1.CreateOptions{})
		return err
	})
}

// statusCeiling reads the webhook's /status.
func statusCeiling(w http.Handler) (spec, source string, known bool) {
	rec := httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status", nil))
	var doc struct {
		Ceiling      struct{ Spec, Source string }
		CeilingKnown bool
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &doc)
	return doc.Ceiling.Spec, doc.Ceiling.Source, doc.CeilingKnown
}

// TestCeilingFromClusterVersion: without a ClusterVersion (a bare API
// server) there is no ceiling, and /status says so; with one, the ceiling
// is what the release a rollback returns to reads, followed as the history
// changes.
func TestCeilingFromClusterVersion(t *testing.T) {
	s := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	read := func(ctx context.Context) (admit.Ceiling, error) { return admit.CeilingFromCluster(ctx, s.cp.Dynamic) }
	w := admit.New(admit.Config{Logger: kubetest.Logger(t)})
	ticks := make(chan time.Time)
	go w.FollowCeiling(ctx, read, ticks)
	kubetest.Eventually(t, 10*time.Second, "a ceiling in /status", func() error {
		if spec, source, known := statusCeiling(w); !known || spec != "" || !strings.Contains(source, "no ClusterVersion") {
			return fmt.Errorf("ceiling %q from %q (known %v)", spec, source, known)
		}
		return nil
	})

	installClusterVersion(t, s)
	setHistory(t, s, "4.19.2/Partial", "4.18.7")
	c, err := read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The 4.19 operator may be the one running: every MachineConfig must
	// pass its validation at 3.5.0.
	if c.Spec.String() != "3.4.0" || c.Reader != "OpenShift 4.18.7 (the release a rollback returns to)" || !strings.Contains(c.Source, "release-4.18") || c.Reads.String() != "3.5.0" {
		t.Errorf("ceiling %+v", c)
	}
	for _, step := range []struct {
		history []string
		want    string
	}{
		{[]string{"4.19.2/Partial", "4.18.7"}, "3.4.0"},
		{[]string{"4.19.3", "4.19.2"}, "3.5.0"},
	} {
		setHistory(t, s, step.history...)
		ticks <- time.Time{}
		kubetest.Eventually(t, 10*time.Second, "ceiling "+step.want, func() error {
			if spec, _, _ := statusCeiling(w); spec != step.want {
				return errors.New("ceiling " + spec)
			}
			return nil
		})
	}
}

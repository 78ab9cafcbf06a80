package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/source/kube"
)

// A server reading a cluster without --max-spec holds renders to the spec
// the release a rollback returns to reads (the ClusterVersion's history),
// says so at start and in /status; --max-spec given wins, and says so.
func TestMaxSpecFromCluster(t *testing.T) {
	kubeconfig, dyn, apply := controlPlane(t, true)
	cvs := schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}
	apply(cvs, `{apiVersion: config.openshift.io/v1, kind: ClusterVersion, metadata: {name: version}, spec: {clusterID: 11111111-2222-3333-4444-555555555555}}`)
	ctx := context.Background()
	cv, err := dyn.Resource(cvs).Get(ctx, "version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	entry := func(v string) map[string]any {
		return map[string]any{"state": "Completed", "version": v, "image": "quay.io/x@sha256:" + strings.Repeat("0", 64),
			"startedTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T01:00:00Z", "verified": false}
	}
	cv.Object["status"] = map[string]any{"desired": map[string]any{"version": "4.19.3", "image": "quay.io/x"}, "observedGeneration": int64(1),
		"versionHash": "x", "availableUpdates": nil, "history": []any{entry("4.19.3"), entry("4.18.7")}}
	if _, err := dyn.Resource(cvs).UpdateStatus(ctx, cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	apply(kube.MachineConfigPools, mctest.RolePool("worker"))
	apply(kube.MachineConfigs, workerMC("one"))

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"from the cluster", nil, "3.4.0, from the cluster: spec 3.4.0: ClusterVersion status.history: 4.18.7 is the last Completed version before 4.19.3, so a rollback returns to it"},
		{"flag", []string{"--max-spec", "3.2.0"}, "3.2.0 (--max-spec)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := start(t, append([]string{"--source", "kube", "--kubeconfig", kubeconfig, "--listen-plain", "127.0.0.1:0", "--listen-tls", "", "--debounce", "20ms"}, tc.args...)...)
			var st status.Status
			waitFor(t, "the worker pool served", func() bool {
				_, body, err := in.get("/status")
				return err == nil && json.Unmarshal(body, &st) == nil && len(st.Pools) == 1
			})
			if !strings.HasPrefix(st.MaxSpec, tc.want) {
				t.Errorf("/status maxSpec %q, want %q", st.MaxSpec, tc.want)
			}
			if tc.args == nil && !strings.Contains(in.stderr.String(), `msg="max-spec from the cluster" maxSpec=3.4.0`) {
				t.Errorf("not said at start:\n%s", in.stderr.String())
			}
			_, page, _ := in.get("/status", "Accept", "text/html")
			if !strings.Contains(string(page), "max spec <b>"+tc.want[:5]) {
				t.Errorf("the status page does not show the max spec")
			}
		})
	}
}

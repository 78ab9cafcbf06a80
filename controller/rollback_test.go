package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// storedConfigs runs a controller with opts over the cluster's objects
// until every pool names a rendered config, and returns the Ignition
// configs of those it stored.
func storedConfigs(t *testing.T, dir string, opts render.Options) map[string][]byte {
	t.Helper()
	cp := needControlPlane(t)
	applyCluster(t, cp, dir)
	c := startController(t, cp, Config{Options: opts, ReleaseOnCancel: true})
	ctx := context.Background()
	pools, err := cp.Dynamic.Resource(kube.MachineConfigPools).List(ctx, metav1.ListOptions{})
	if err != nil || len(pools.Items) == 0 {
		t.Fatalf("pools: %v", err)
	}
	kubetest.Eventually(t, 60*time.Second, "every pool rendered", func() error {
		for _, p := range pools.Items {
			if configuration(pool(t, cp, p.GetName())) == "" {
				return fmt.Errorf("pool %s names no rendered config", p.GetName())
			}
		}
		return nil
	})
	c.stop()
	out := map[string][]byte{}
	for _, p := range pools.Items {
		for name, u := range renderedConfigs(t, cp, p.GetName()) {
			cfg, err := json.Marshal(u.Object["spec"].(map[string]any)["config"])
			if err != nil {
				t.Fatal(err)
			}
			out[name] = cfg
		}
	}
	return out
}

// The seed bug, rehearsed: the release before a 3.4-writing one reads spec
// 3.2 at most. Every rendered config the controller stores from real
// clusters parses with that release's reader, so a rollback finds every
// pool readable; the same pools stored at the newest spec, as OpenShift
// stores them, do not parse.
func TestRollbackRehearsal(t *testing.T) {
	reader := testkit.RollbackReader(t, "v2.10.1")
	for _, cluster := range []string{"aws", "none"} {
		t.Run(cluster, func(t *testing.T) {
			dir := clusterDir(t, cluster)
			low := storedConfigs(t, dir, render.Options{})
			for name, verdict := range testkit.ReaderVerdicts(t, reader, low) {
				if verdict != "" {
					t.Errorf("%s does not parse with the 3.2 reader: %s", name, verdict)
				}
				var v struct {
					Ignition struct{ Version string } `json:"ignition"`
				}
				_ = json.Unmarshal(low[name], &v)
				if ver, err := convert.ParseVersion(v.Ignition.Version); err != nil || convert.V3_2.Less(ver) {
					t.Errorf("%s is at spec %q", name, v.Ignition.Version)
				}
			}
			newest := storedConfigs(t, dir, render.Options{Spec: convert.V3_5})
			for name, verdict := range testkit.ReaderVerdicts(t, reader, newest) {
				if !strings.Contains(verdict, "unsupported config version") {
					t.Errorf("%s at spec 3.5.0: the 3.2 reader says %q, want it refused", name, verdict)
				}
			}
			t.Logf("%d rendered configs at the lowest spec parse with Ignition v2.10.1; %d at 3.5.0 do not", len(low), len(newest))
		})
	}
}

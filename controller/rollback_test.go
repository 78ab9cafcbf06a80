package controller

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// rollbackReader is what `make rollback-reader` builds: Ignition v2.10.1's
// config.Parse, whose newest stable spec is 3.2.
func rollbackReader(t *testing.T) string {
	t.Helper()
	bin := testkit.ToolsDir("rollback", "rollback-reader-v2.10.1")
	if !testkit.Executable(bin) {
		testkit.Missing(t, "no rollback reader at %s; run `make rollback-reader`", bin)
	}
	return bin
}

// readerVerdicts runs the old reader over each config and returns, per
// name, "" when it parsed or the reader's error.
func readerVerdicts(t *testing.T, reader string, configs map[string][]byte) map[string]string {
	t.Helper()
	dir := t.TempDir()
	var args []string
	byFile := map[string]string{}
	for name, cfg := range configs {
		f := filepath.Join(dir, name+".ign")
		if err := os.WriteFile(f, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, f)
		byFile[f] = name
	}
	out, err := exec.Command(reader, args...).Output()
	if err != nil {
		t.Fatalf("%s: %v", reader, err)
	}
	verdicts := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r struct {
			File  string `json:"file"`
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("reader output %q: %v", sc.Text(), err)
		}
		verdicts[byFile[r.File]] = r.Error
		if !r.OK && r.Error == "" {
			verdicts[byFile[r.File]] = "failed"
		}
	}
	if len(verdicts) != len(configs) {
		t.Fatalf("the reader answered for %d of %d configs", len(verdicts), len(configs))
	}
	return verdicts
}

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
	reader := rollbackReader(t)
	for _, cluster := range []string{"aws", "none"} {
		t.Run(cluster, func(t *testing.T) {
			dir := clusterDir(t, cluster)
			low := storedConfigs(t, dir, render.Options{})
			for name, verdict := range readerVerdicts(t, reader, low) {
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
			for name, verdict := range readerVerdicts(t, reader, newest) {
				if !strings.Contains(verdict, "unsupported config version") {
					t.Errorf("%s at spec 3.5.0: the 3.2 reader says %q, want it refused", name, verdict)
				}
			}
			t.Logf("%d rendered configs at the lowest spec parse with Ignition v2.10.1; %d at 3.5.0 do not", len(low), len(newest))
		})
	}
}

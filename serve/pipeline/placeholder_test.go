package pipeline_test

import (
	"bytes"
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/internal/shareddata"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
)

// The placeholder swap is an optimisation only: every version's body must be
// byte-identical to encoding the served config directly.
func TestPlaceholdersChangeNothing(t *testing.T) {
	// A pool that ships its own kubelet CA: the node file takes its place.
	shadow := t.TempDir()
	os.WriteFile(shadow+"/a.yaml", []byte(`apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 50-worker-ca, labels: {machineconfiguration.openshift.io/role: worker}}
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
      - {path: /etc/first, contents: {source: "data:,`+strings.Repeat("a", 600)+`"}}
      - {path: /etc/kubernetes/kubelet-ca.crt, contents: {source: "data:,`+strings.Repeat("b", 600)+`"}}
      - {path: /etc/last, contents: {source: "data:,`+strings.Repeat("c", 600)+`"}}
`), 0o644)
	os.WriteFile(shadow+"/cc.yaml", []byte(`apiVersion: machineconfiguration.openshift.io/v1
kind: ControllerConfig
metadata: {name: machine-config-controller}
spec:
  kubeAPIServerServingCAData: `+base64.StdEncoding.EncodeToString([]byte(strings.Repeat("d", 700)))+`
`), 0o644)
	dirs := []string{shadow, "../../fixtures/cluster", "../../fixtures/features/kargs-3.3", "../../fixtures/features/compression-override"}
	if d, ok := shareddata.Optional(t, "realdata", "none"); ok {
		dirs = append(dirs, d)
	}
	for _, dir := range dirs {
		set, results := servetest.Render(t, dir, render.Options{})
		for _, res := range results {
			precomputed, direct, err := pipeline.Bodies(res, set.ControllerConfig(), render.NodeFiles{Kubeconfig: bytes.Repeat([]byte("k"), 4096)})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range convert.OutputVersions {
				got, served := precomputed[v]
				want, encoded := direct[v]
				if served != encoded {
					t.Fatalf("%s %s %s: served %v, direct encoding %v", dir, res.Pool, v, served, encoded)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s %s %s: bodies differ", dir, res.Pool, v)
				}
				if bytes.Contains(got, []byte("mcsph-")) {
					t.Fatalf("%s %s %s: a token was left in the body", dir, res.Pool, v)
				}
			}
		}
	}
}

package serve

import (
	"bytes"
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
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
	for _, dir := range []string{shadow, "../fixtures/cluster", "../fixtures/features/kargs-3.3", "../fixtures/features/compression-override", "../../shared/realdata/none"} {
		if _, err := os.Stat(dir); err != nil && strings.Contains(dir, "shared") {
			t.Logf("skipping %s: %v", dir, err) // the project's shared data, beside the clone
			continue
		}
		set, err := render.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		results, rerr := set.Render(render.Options{})
		if rerr != nil {
			t.Fatal(rerr)
		}
		for _, res := range results {
			shared, err := nodeFiles(res, set.ControllerConfig(), NodeFiles{Kubeconfig: bytes.Repeat([]byte("k"), 4096)})
			if err != nil {
				t.Fatal(err)
			}
			p, err := buildPool(res, set.ControllerConfig(), NodeFiles{Kubeconfig: bytes.Repeat([]byte("k"), 4096)})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range convert.OutputVersions {
				cfg := withNodeFiles(res.Config, shared)
				var want []byte
				werr := servedConfig(&cfg, res, v)
				if werr == nil {
					want, werr = convert.Encode(&cfg, v, false)
				}
				if (p.responses[v] == nil) != (werr != nil) {
					t.Fatalf("%s %s %s: served %v, direct encoding: %v", dir, res.Pool, v, p.responses[v] != nil, werr)
				}
				if werr == nil && !bytes.Equal(p.responses[v].body, want) {
					t.Fatalf("%s %s %s: bodies differ", dir, res.Pool, v)
				}
				if werr == nil && bytes.Contains(p.responses[v].body, []byte("mcsph-")) {
					t.Fatalf("%s %s %s: a token was left in the body", dir, res.Pool, v)
				}
			}
		}
	}
}

package render

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
)

// fingerprintDocs is a worker pool and two custom pools that also select the
// worker role, as a cluster with per-hardware pools has, by file name.
func fingerprintDocs() map[string]string {
	pool := func(name string) string {
		return "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  name: " + name +
			"\nspec:\n  machineConfigSelector:\n    matchExpressions:\n    - {key: machineconfiguration.openshift.io/role, operator: In, values: [worker, " + name + "]}\n"
	}
	docs := map[string]string{
		"pool-worker": pool("worker"),
		"pool-gpu":    pool("gpu"),
		"pool-edge":   pool("edge"),
		"00-worker":   doc("00-worker", "worker", file("/etc/w", "data:,worker")),
		"50-gpu":      doc("50-gpu", "gpu", file("/etc/gpu", "data:,gpu")),
		"50-edge":     doc("50-edge", "edge", file("/etc/edge", "data:,edge")),
		"cc": "apiVersion: machineconfiguration.openshift.io/v1\nkind: ControllerConfig\nmetadata:\n  name: machine-config-controller\n" +
			"spec:\n  baseOSContainerImage: quay.io/os@sha256:1\n  kubeAPIServerServingCAData: Y2E=\n",
	}
	return docs
}

// fingerprintSet loads fingerprintDocs with edit's documents replacing
// (added, or removed when empty) those of the same name.
func fingerprintSet(t *testing.T, edit map[string]string, api bool) *Set {
	t.Helper()
	docs := fingerprintDocs()
	maps.Copy(docs, edit)
	l := Loader{FromAPIServer: api}
	for _, k := range slices.Sorted(maps.Keys(docs)) {
		if docs[k] != "" {
			l.Data("in/"+k+".yaml", []byte(docs[k]))
		}
	}
	s, err := l.Set()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFingerprints(t *testing.T) {
	all := []string{"edge", "gpu", "worker"}
	base := fingerprintSet(t, nil, false).Fingerprints(Options{})
	apiBase := fingerprintSet(t, nil, true).Fingerprints(Options{})
	docs := fingerprintDocs()
	if len(base) != 3 {
		t.Fatalf("fingerprints %v", base)
	}
	for _, tc := range []struct {
		name    string
		edit    map[string]string
		opts    Options
		api     bool // read from an API server, where objects have no lines
		changed []string
	}{
		{name: "same objects loaded again", changed: nil},
		{name: "custom pool's MachineConfig", edit: map[string]string{"50-gpu": doc("50-gpu", "gpu", file("/etc/gpu", "data:,gpu2"))}, changed: []string{"gpu"}},
		{name: "custom pool's MachineConfig added", edit: map[string]string{"60-edge": doc("60-edge", "edge", "", "kernelArguments: [nosmt]")}, changed: []string{"edge"}},
		{name: "custom pool's MachineConfig removed", edit: map[string]string{"50-edge": ""}, changed: []string{"edge"}},
		{name: "worker MachineConfig", edit: map[string]string{"00-worker": doc("00-worker", "worker", file("/etc/w", "data:,worker2"))}, changed: all},
		{name: "label only", edit: map[string]string{"50-gpu": strings.Replace(doc("50-gpu", "gpu", file("/etc/gpu", "data:,gpu")), "labels:\n", "labels:\n    x: z\n", 1)}, changed: []string{"gpu"}},
		{name: "pool's selector", edit: map[string]string{"pool-edge": strings.Replace(docs["pool-edge"], "values: [worker, edge]", "values: [edge]", 1)}, changed: []string{"edge"}},
		{name: "pool's labels and resourceVersion", edit: map[string]string{"pool-edge": strings.Replace(docs["pool-edge"], "metadata:\n", "metadata:\n  labels: {a: b}\n  resourceVersion: \"7\"\n", 1)}, changed: nil},
		{name: "MachineConfig's resourceVersion", api: true, edit: map[string]string{"50-gpu": strings.Replace(doc("50-gpu", "gpu", file("/etc/gpu", "data:,gpu")), "metadata:\n", "metadata:\n  resourceVersion: \"9\"\n", 1)}, changed: nil},
		// In a file, the lines its reasons and overrides quote moved.
		{name: "a MachineConfig's lines moved", edit: map[string]string{"50-gpu": "# a comment\n" + doc("50-gpu", "gpu", file("/etc/gpu", "data:,gpu"))}, changed: []string{"gpu"}},
		{name: "MachineConfig's annotation", edit: map[string]string{"50-gpu": strings.Replace(doc("50-gpu", "gpu", file("/etc/gpu", "data:,gpu")), "metadata:\n", "metadata:\n  annotations: {a: b}\n", 1)}, changed: []string{"gpu"}},
		{name: "OS image", edit: map[string]string{"cc": strings.Replace(docs["cc"], "sha256:1", "sha256:2", 1)}, changed: all},
		{name: "served CA only", edit: map[string]string{"cc": strings.Replace(docs["cc"], "Y2E=", "Y2I=", 1)}, changed: nil},
		{name: "options", opts: Options{MinSpec: convert.V3_2}, changed: all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fingerprintSet(t, tc.edit, tc.api).Fingerprints(tc.opts)
			was := base
			if tc.api {
				was = apiBase
			}
			var changed []string
			for _, p := range all {
				if got[p] != was[p] {
					changed = append(changed, p)
				}
			}
			if !slices.Equal(changed, tc.changed) {
				t.Fatalf("changed %v, want %v", changed, tc.changed)
			}
		})
	}
}

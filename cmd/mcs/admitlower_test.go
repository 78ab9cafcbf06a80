package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/internal/testkit"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

// lowerExistingCluster is a worker pool, configs it selects that lower
// (or not) and one it does not select.
var lowerExistingCluster = mctest.RolePool("worker") + `---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 50-files, labels: {machineconfiguration.openshift.io/role: worker}}
spec: {config: {ignition: {version: 3.5.0}, storage: {files: [{path: /etc/a, contents: {source: "data:,a"}}]}}}
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 50-kargs, labels: {machineconfiguration.openshift.io/role: worker}}
spec: {config: {ignition: {version: 3.5.0}, kernelArguments: {shouldExist: [nosmt]}}}
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 50-cex, labels: {machineconfiguration.openshift.io/role: worker}}
spec: {config: {ignition: {version: 3.5.0}, storage: {luks: [{name: root, device: /dev/sda, cex: {enabled: true}}]}}}
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 50-stray}
spec: {config: {ignition: {version: 3.4.0}}}
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 50-low, labels: {machineconfiguration.openshift.io/role: worker}}
spec: {config: {ignition: {version: 3.1.0}}}
`

// mcs admit lower-existing as an admin runs it: the dry run lists a line
// per MachineConfig with the spec before and after, or why it stays, and
// writes nothing; --confirm stores them and exits 1 for the one that
// needs more than the ceiling; with no ceiling known (no ClusterVersion,
// no --max-spec), what is above its lowest spec. Golden:
// testdata/lower-existing.txt.
func TestAdmitLowerExisting(t *testing.T) {
	cp := kubetest.New(t, false)
	cp.Apply(t, kubetest.DecodeObjects(t, []byte(lowerExistingCluster))...)
	kc := cp.Kubeconfig(t, "admin")
	var transcript strings.Builder
	runIt := func(want int, args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		err := dispatch(context.Background(), append([]string{"admit", "lower-existing", "--kubeconfig", kc}, args...), nil, &out, &errb)
		if code := cmdline.Code(err); code != want {
			t.Errorf("%v: exit %d (%v), want %d\n%s%s", args, code, err, want, out.String(), errb.String())
		}
		transcript.WriteString(strings.TrimSpace("$ mcs admit lower-existing "+strings.Join(args, " ")) + "\n" + out.String())
		if err != nil {
			transcript.WriteString("error: " + err.Error() + "\n")
		}
	}
	runIt(0)
	runIt(0, "--max-spec", "3.4.0")
	runIt(1, "--max-spec", "3.4.0", "--confirm")
	runIt(1, "--max-spec", "3.4.0", "--confirm")
	runIt(0, "--max-spec", "3.4.0")
	testkit.Golden(t, filepath.Join("testdata", "lower-existing.txt"), transcript.String(), *update)
}

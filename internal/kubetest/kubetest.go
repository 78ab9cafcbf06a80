// Package kubetest finds what the tests run a real Kubernetes control plane with: the binaries and the MachineConfig CRDs.
package kubetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	// The CRDs come from this module, at the version go.mod pins; the
	// import keeps it there.
	_ "github.com/openshift/api/machineconfiguration/v1"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// findAssets finds kube-apiserver and etcd for envtest: $KUBEBUILDER_ASSETS,
// else what `make kube-tools` builds under $MCS_TOOLS (default
// ~/.cache/mcs-tools).
func findAssets() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = testkit.ToolsDir("kube")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if !testkit.Executable(filepath.Join(dir, b)) {
			return "", fmt.Errorf("no %s in %s (run `make kube-tools`)", b, dir)
		}
	}
	return dir, nil
}

// CRDFiles are the real CRDs from github.com/openshift/api: MachineConfigs
// and MachineConfigPools (a self-managed cluster's, with
// spec.osImageStream: the OSStreams gate is on in every feature set there),
// and with all the ControllerConfig, the Infrastructure and the
// ClusterVersion (the Default feature set's), KubeletConfigs and ContainerRuntimeConfigs (the
// controller's guards read them), the OSImageStream and the
// MachineConfiguration (one CRD for every feature set since the
// BootImageSkewEnforcement gate went GA).
func CRDFiles(all bool) ([]string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openshift/api").Output()
	if err != nil {
		return nil, fmt.Errorf("locating github.com/openshift/api: %w", err)
	}
	api := strings.TrimSpace(string(out))
	mc := filepath.Join(api, "machineconfiguration", "v1", "zz_generated.crd-manifests")
	files := []string{
		filepath.Join(mc, "0000_80_machine-config_01_machineconfigs.crd.yaml"),
		filepath.Join(mc, "0000_80_machine-config_01_machineconfigpools-SelfManagedHA.crd.yaml"),
	}
	if all {
		files = append(files,
			filepath.Join(mc, "0000_80_machine-config_01_controllerconfigs-Default.crd.yaml"),
			filepath.Join(mc, "0000_80_machine-config_01_machineosconfigs.crd.yaml"),
			filepath.Join(mc, "0000_80_machine-config_01_machineosbuilds.crd.yaml"),
			filepath.Join(mc, "0000_80_machine-config_01_kubeletconfigs-Default.crd.yaml"),
			filepath.Join(mc, "0000_80_machine-config_01_containerruntimeconfigs.crd.yaml"),
			filepath.Join(mc, "0000_80_machine-config_01_osimagestreams-SelfManagedHA.crd.yaml"),
			filepath.Join(api, "operator", "v1", "zz_generated.crd-manifests", "0000_80_machine-config_01_machineconfigurations.crd.yaml"),
			filepath.Join(api, "config", "v1", "zz_generated.crd-manifests", "0000_10_config-operator_01_infrastructures-Default.crd.yaml"),
			filepath.Join(api, "config", "v1", "zz_generated.crd-manifests", "0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml"))
	}
	return files, nil
}

// missing ends a test that has no control plane: a skip saying why, or
// under CI (CI=true) a failure, so a pipeline cannot pass without having
// run it.
func missing(t testing.TB, why string) {
	t.Helper()
	msg := "no Kubernetes control plane: " + why
	if testing.Short() {
		t.Skip(msg)
	}
	testkit.Missing(t, "%s", msg)
}

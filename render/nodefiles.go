package render

import (
	"encoding/json"
	"fmt"

	"github.com/coreos/ignition/v2/config/v3_6/types"

	"github.com/ignition-mcs/mcs/convert"
)

// NodeFiles is what a server adds to every pool's config beside the render,
// as OpenShift's does.
type NodeFiles struct {
	// Kubeconfig is the node bootstrap kubeconfig; a credential, never logged.
	Kubeconfig []byte
	// KubeletCA overrides the ControllerConfig's API server serving CA.
	KubeletCA []byte
}

// Paths of the files OpenShift's server adds.
const (
	pathKubeletCA   = "/etc/kubernetes/kubelet-ca.crt"
	pathCloudCA     = "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem"
	pathAnnotations = "/etc/machine-config-daemon/node-annotations.json"
	pathKubeconfig  = "/etc/kubernetes/kubeconfig"
	pathContent     = "/etc/mcs-machine-config-content.json"
)

// Key is the key of what Files adds beside any render under cc: the
// node files and the ControllerConfig's CAs.
func (nf NodeFiles) Key(cc *ControllerConfig) Key {
	var kube, cloud []byte
	if cc != nil {
		kube, cloud = cc.KubeAPIServerServingCAData, cc.CloudProviderCAData
	}
	return keyOf(nf.Kubeconfig, nf.KubeletCA, kube, cloud)
}

// Files are the files OpenShift's server adds to res's config that are the
// same for every spec version, in its order.
func (nf NodeFiles) Files(res *Result, cc *ControllerConfig) ([]types.File, error) {
	content, err := json.Marshal(res.MachineConfig)
	if err != nil {
		return nil, fmt.Errorf("encoding rendered MachineConfig: %w", err)
	}
	kubeletCA := nf.KubeletCA
	var cloudCA []byte
	if cc != nil {
		if len(kubeletCA) == 0 {
			kubeletCA = cc.KubeAPIServerServingCAData
		}
		cloudCA = cc.CloudProviderCAData
	}
	var files []types.File
	if len(kubeletCA) > 0 {
		files = append(files, convert.DataFile(pathKubeletCA, kubeletCA))
	}
	if len(cloudCA) > 0 {
		files = append(files, convert.DataFile(pathCloudCA, cloudCA))
	}
	annotations, err := json.Marshal(map[string]string{
		"machineconfiguration.openshift.io/currentConfig":    res.Name,
		"machineconfiguration.openshift.io/desiredConfig":    res.Name,
		"machineconfiguration.openshift.io/firstPivotConfig": res.Name,
		"machineconfiguration.openshift.io/state":            "Done",
	})
	if err != nil {
		return nil, err
	}
	files = append(files, convert.DataFile(pathAnnotations, annotations))
	if len(nf.Kubeconfig) > 0 {
		files = append(files, convert.DataFile(pathKubeconfig, nf.Kubeconfig))
	}
	return append(files, convert.DataFile(pathContent, content)), nil
}

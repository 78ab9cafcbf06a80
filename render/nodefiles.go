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
	// RegistryCAs are the bootstrap server's registry CAs (its
	// --bootstrap-certs), served as /etc/docker/certs.d/<registry>/ca.crt
	// after the MachineConfig content, in this order.
	RegistryCAs []RegistryCA
}

// RegistryCA is one registry's CA bundle.
type RegistryCA struct {
	Registry string
	PEM      []byte
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
// node files and what Files reads of cc (nodeFilesInput), hashed whole.
func (nf NodeFiles) Key(cc *ControllerConfig) Key {
	in := nodeFilesInput{NodeFiles: nf}
	if cc != nil {
		in.KubeAPIServerServingCAData, in.CloudProviderCAData = cc.KubeAPIServerServingCAData, cc.CloudProviderCAData
	}
	k := newKeyer()
	k.string("node files")
	k.json(in)
	return k.sum()
}

// nodeFilesInput is what Files reads beside the render: a field of
// NodeFiles is in it by construction, one of ControllerConfig when copied
// here (TestKeyCoversEveryField fails until every field is read by a
// render, by Files, or listed as read by neither).
type nodeFilesInput struct {
	NodeFiles
	KubeAPIServerServingCAData, CloudProviderCAData []byte
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
	annotations, err := json.Marshal(nodeAnnotations(res))
	if err != nil {
		return nil, err
	}
	files = append(files, convert.DataFile(pathAnnotations, annotations))
	if len(nf.Kubeconfig) > 0 {
		files = append(files, convert.DataFile(pathKubeconfig, nf.Kubeconfig))
	}
	files = append(files, convert.DataFile(pathContent, content))
	for _, r := range nf.RegistryCAs {
		files = append(files, convert.DataFile("/etc/docker/certs.d/"+r.Registry+"/ca.crt", r.PEM))
	}
	return files, nil
}

// annotationPreBuiltImage, on a rendered MachineConfig, names the layered
// image its nodes run from install on (upstream's PreBuiltImageAnnotationKey).
const annotationPreBuiltImage = "machineconfiguration.openshift.io/pre-built-image"

// nodeAnnotations are what the node's daemon starts from, as upstream's
// getNodeAnnotation writes them: an image-mode pool's image (the
// pre-built-image annotation first) adds currentImage and desiredImage.
func nodeAnnotations(res *Result) map[string]string {
	a := map[string]string{
		"machineconfiguration.openshift.io/currentConfig":    res.Name,
		"machineconfiguration.openshift.io/desiredConfig":    res.Name,
		"machineconfiguration.openshift.io/firstPivotConfig": res.Name,
		"machineconfiguration.openshift.io/state":            "Done",
	}
	image := res.Image
	if pre := res.MachineConfig.Metadata.Annotations[annotationPreBuiltImage]; pre != "" {
		image = pre
	}
	if image != "" {
		a["machineconfiguration.openshift.io/currentImage"] = image
		a["machineconfiguration.openshift.io/desiredImage"] = image
	}
	return a
}

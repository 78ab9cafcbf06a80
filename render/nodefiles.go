package render

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"

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
	// pathServerCA is the server's root CA bundle, which the node's daemon
	// trusts to report a failed first boot (machine-config-operator PR
	// #6124).
	pathServerCA = "/etc/machine-config-daemon/mcs-ca-bundle.crt"
	pathContent  = "/etc/mcs-machine-config-content.json"
)

// Key is the key of what Files adds beside any render under cc: the
// node files and what Files reads of cc (nodeFilesInput), hashed whole.
func (nf NodeFiles) Key(cc *ControllerConfig) Key {
	in := nodeFilesInput{NodeFiles: nf}
	if cc != nil {
		in.KubeAPIServerServingCAData, in.CloudProviderCAData = cc.KubeAPIServerServingCAData, cc.CloudProviderCAData
		in.RootCAData, in.ServerURL = cc.RootCAData, cc.ServerURL
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
	KubeAPIServerServingCAData, CloudProviderCAData, RootCAData []byte
	ServerURL                                                   string
}

// Files are the files OpenShift's server adds to res's config that are the
// same for every spec version, in its order.
func (nf NodeFiles) Files(res *Result, cc *ControllerConfig) ([]types.File, error) {
	content, err := json.Marshal(res.MachineConfig)
	if err != nil {
		return nil, fmt.Errorf("encoding rendered MachineConfig: %w", err)
	}
	kubeletCA := nf.KubeletCA
	var cloudCA, serverCA []byte
	var serverURL string
	if cc != nil {
		if len(kubeletCA) == 0 {
			kubeletCA = cc.KubeAPIServerServingCAData
		}
		cloudCA, serverCA, serverURL = cc.CloudProviderCAData, cc.RootCAData, cc.ServerURL
	}
	var files []types.File
	if len(kubeletCA) > 0 {
		files = append(files, convert.DataFile(pathKubeletCA, kubeletCA))
	}
	if len(cloudCA) > 0 {
		files = append(files, convert.DataFile(pathCloudCA, cloudCA))
	}
	if len(serverCA) > 0 {
		files = append(files, convert.DataFile(pathServerCA, serverCA))
	}
	annotations, err := json.Marshal(nodeAnnotations(res, serverURL))
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
// pre-built-image annotation first) adds currentImage and desiredImage,
// and the server's URL (PR #6124) machineConfigServerURL.
func nodeAnnotations(res *Result, serverURL string) map[string]string {
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
	if serverURL != "" {
		a[annotationServerURL] = serverURL
	}
	return a
}

// annotationServerURL is the node annotation where the node's daemon
// finds the server to report a failed first boot to.
const annotationServerURL = "machineconfiguration.openshift.io/machineConfigServerURL"

// infraStatus is the part of an Infrastructure's status the server's URL
// comes from.
type infraStatus struct {
	APIServerInternalURI string `json:"apiServerInternalURI"`
	PlatformStatus       struct {
		Type      string        `json:"type"`
		BareMetal *internalVIPs `json:"baremetal"`
		OpenStack *internalVIPs `json:"openstack"`
		Ovirt     *internalVIPs `json:"ovirt"`
		VSphere   *internalVIPs `json:"vsphere"`
	} `json:"platformStatus"`
}

type internalVIPs struct {
	APIServerInternalIPs []string `json:"apiServerInternalIPs"`
}

// serverURL is https://HOST:22623 as machine-config-operator PR #6124's
// GetIgnitionHost makes it: the api-int host of apiServerInternalURI, or
// on bare metal, OpenStack, oVirt and vSphere the first internal API IP.
// Empty without a host.
func (st infraStatus) serverURL() string {
	host := ""
	if u, err := url.Parse(st.APIServerInternalURI); err == nil {
		host = u.Hostname()
	}
	ps := st.PlatformStatus
	vips := map[string]*internalVIPs{"BareMetal": ps.BareMetal, "OpenStack": ps.OpenStack, "Ovirt": ps.Ovirt, "VSphere": ps.VSphere}[ps.Type]
	if vips != nil && len(vips.APIServerInternalIPs) > 0 {
		host = vips.APIServerInternalIPs[0]
	}
	if host == "" {
		return ""
	}
	return "https://" + net.JoinHostPort(host, "22623")
}

package kube

import (
	"bytes"
	"fmt"
	"path/filepath"

	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/internal/regularfile"
)

// nodeFileMax bounds the token and CA files read: a CA bundle is some
// hundred KiB at most.
const nodeFileMax = 16 << 20

// NodeKubeconfig is the kubeconfig served to nodes as
// /etc/kubernetes/kubeconfig, built as upstream's kubeconfigFromSecret
// builds it (the same YAML, byte for byte): the node-bootstrapper token of
// tokenDir, apiserverURL, and ca, or tokenDir's ca.crt when ca is nil.
// Unlike upstream, the token's trailing newline, if any, is dropped: in an
// HTTP header it would make every request of the node's kubelet fail.
// Only regular files are opened: a FIFO would hang the render.
func NodeKubeconfig(tokenDir, apiserverURL string, ca []byte) ([]byte, error) {
	if ca == nil {
		b, _, err := regularfile.ReadFile(filepath.Join(tokenDir, "ca.crt"), nodeFileMax)
		if err != nil {
			return nil, fmt.Errorf("node kubeconfig: no ConfigMap %s/%s with ca-bundle.crt, and %w", MCONamespace, KubeconfigDataName, err)
		}
		ca = b
	}
	token, _, err := regularfile.ReadFile(filepath.Join(tokenDir, "token"), nodeFileMax)
	if err != nil {
		return nil, fmt.Errorf("node kubeconfig: %w", err)
	}
	token = bytes.TrimRight(token, "\r\n")
	if len(token) == 0 {
		return nil, fmt.Errorf("node kubeconfig: %s is empty", filepath.Join(tokenDir, "token"))
	}
	kc := clientcmdv1.Config{
		Clusters:       []clientcmdv1.NamedCluster{{Name: "local", Cluster: clientcmdv1.Cluster{Server: apiserverURL, CertificateAuthorityData: ca}}},
		AuthInfos:      []clientcmdv1.NamedAuthInfo{{Name: "kubelet", AuthInfo: clientcmdv1.AuthInfo{Token: string(token)}}},
		Contexts:       []clientcmdv1.NamedContext{{Name: "kubelet", Context: clientcmdv1.Context{Cluster: "local", AuthInfo: "kubelet"}}},
		CurrentContext: "kubelet",
	}
	return yaml.Marshal(kc)
}

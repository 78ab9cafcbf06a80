package main

import (
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// startNodeFiles reads, at every render, the node files of mcs start: the
// kubeconfig with the CA the cluster's kubeconfig-data holds now.
func startNodeFiles(st *startOptions, src *kube.Source) func() (render.NodeFiles, error) {
	return func() (render.NodeFiles, error) {
		kc, err := kube.NodeKubeconfig(st.tokenDir, st.apiserverURL, src.KubeconfigCA())
		return render.NodeFiles{Kubeconfig: kc}, err
	}
}

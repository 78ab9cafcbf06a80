package main

import (
	"flag"
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/source/kube"
)

// apiClients are the API server's clients as the commands that only talk to
// it (preflight, prune, pki, and the controller's PKI manager) use them.
type apiClients struct {
	rest     *rest.Config
	kube     kubernetes.Interface
	dynamic  dynamic.Interface
	metadata metadata.Interface
}

// kubeconfigFlag defines --kubeconfig on fs; the function it returns,
// called once fs is parsed, connects as it says.
func kubeconfigFlag(fs *flag.FlagSet) func() (*apiClients, error) {
	path := fs.String("kubeconfig", "", "kubeconfig (default: in-cluster, then $KUBECONFIG or ~/.kube/config)")
	return func() (*apiClients, error) {
		rc, err := restConfig(*path)
		if err != nil {
			return nil, err
		}
		return newAPIClients(rc)
	}
}

// restConfig is kube.RESTConfig, a kubeconfig file named by --kubeconfig
// that does not load told as the flag's mistake.
func restConfig(path string) (*rest.Config, error) {
	rc, err := kube.RESTConfig(path)
	if err != nil && path != "" {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return rc, err
}

func newAPIClients(rc *rest.Config) (*apiClients, error) {
	c := &apiClients{rest: rc}
	var err error
	if c.kube, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, err
	}
	if c.dynamic, err = dynamic.NewForConfig(rc); err != nil {
		return nil, err
	}
	if c.metadata, err = metadata.NewForConfig(rc); err != nil {
		return nil, err
	}
	return c, nil
}

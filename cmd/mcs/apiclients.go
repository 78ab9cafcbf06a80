package main

import (
	"flag"
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/internal/daemon"
	"github.com/ignition-mcs/mcs/source/kube"
)

// kubeconfigFlag defines --kubeconfig on fs; the function it returns,
// called once fs is parsed, connects as it says.
func kubeconfigFlag(fs *flag.FlagSet) func() (*daemon.Clients, error) {
	path := fs.String("kubeconfig", "", "kubeconfig (default: in-cluster, then $KUBECONFIG or ~/.kube/config)")
	return func() (*daemon.Clients, error) { return connect(*path) }
}

// connect is the API clients of the kubeconfig at path (see restConfig).
func connect(path string) (*daemon.Clients, error) {
	rc, err := restConfig(path)
	if err != nil {
		return nil, err
	}
	return daemon.NewClients(rc)
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

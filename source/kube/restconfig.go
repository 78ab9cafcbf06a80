package kube

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig finds the API server: the kubeconfig file when one is named,
// else the pod's service account when running in a cluster, else
// $KUBECONFIG or ~/.kube/config, as kubectl does.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		c, err := rest.InClusterConfig()
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, rest.ErrNotInCluster) {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if kubeconfig != "" {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return nil, fmt.Errorf("not in a cluster, and no usable kubeconfig: %w", err)
	}
	return c, nil
}

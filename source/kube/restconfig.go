package kube

import (
	"errors"
	"fmt"
	"os"
	"strings"

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
			// The caller names its flag; the file is named here once.
			if clientcmd.IsEmptyConfig(err) {
				return nil, fmt.Errorf("%s names no cluster", kubeconfig)
			}
			if !strings.Contains(err.Error(), kubeconfig) {
				err = fmt.Errorf("%s: %w", kubeconfig, err)
			}
			return nil, err
		}
		if clientcmd.IsEmptyConfig(err) {
			// client-go's own words suggest KUBERNETES_MASTER, which is
			// not how anyone points mcs at a cluster: say what was tried.
			return nil, fmt.Errorf("no API server to talk to: not in a cluster (KUBERNETES_SERVICE_HOST unset), and no kubeconfig (%s)", tried(rules.Precedence))
		}
		return nil, fmt.Errorf("not in a cluster, and no usable kubeconfig: %w", err)
	}
	return c, nil
}

// tried says what became of each kubeconfig file looked for.
func tried(paths []string) string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			out = append(out, p+": no such file")
		} else {
			out = append(out, p+": names no cluster")
		}
	}
	from := "~/.kube/config, as $KUBECONFIG is unset"
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "" {
		from = "$KUBECONFIG"
	}
	if len(out) == 0 {
		return from + ": empty"
	}
	return from + ": " + strings.Join(out, ", ")
}

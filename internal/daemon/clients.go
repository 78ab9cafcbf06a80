package daemon

import (
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/source/kube"
)

// Clients are the API server's clients as mcs's commands use them.
type Clients struct {
	REST     *rest.Config
	Kube     kubernetes.Interface
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
}

// NewClients makes every client from rc.
func NewClients(rc *rest.Config) (*Clients, error) {
	c := &Clients{REST: rc}
	var err error
	if c.Kube, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, err
	}
	if c.Dynamic, c.Metadata, err = kube.DynamicClients(rc); err != nil {
		return nil, err
	}
	return c, nil
}

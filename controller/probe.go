package controller

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/source/kube"
)

// ReadError is a resource every render reads that the API server would
// not list: not served (no such CRD), forbidden, or not reached.
type ReadError struct {
	Resource schema.GroupVersionResource
	Err      error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("listing %s.%s: %v", e.Resource.Resource, e.Resource.Group, e.Err)
}

func (e *ReadError) Unwrap() error { return e.Err }

// probed are what every render reads; the rest (the ControllerConfig,
// Nodes, KubeletConfigs, OSImageStreams ...) it reads where the cluster
// has them, and renders without where not.
var probed = []schema.GroupVersionResource{kube.MachineConfigPools, kube.MachineConfigs}

// Probe lists one object of each resource every render reads, changing
// nothing, so that a controller started where it cannot read them (a
// workstation's kubeconfig of another cluster, a user without the rights)
// says so at once rather than its caches retrying without end.
func Probe(ctx context.Context, rc *rest.Config) error {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	for _, r := range probed {
		if _, err := dyn.Resource(r).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return &ReadError{Resource: r, Err: err}
		}
	}
	return nil
}

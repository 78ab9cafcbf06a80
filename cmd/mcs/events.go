package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ignition-mcs/mcs/source"
	"github.com/ignition-mcs/mcs/source/kube"
)

// clusterNotifier is, with --source kube, what turns the server's notices
// into Events on the MachineConfigPools, until ctx ends; nil otherwise.
func clusterNotifier(ctx context.Context, src source.Source) (func(source.Notice), error) {
	ks, ok := src.(*kube.Source)
	if !ok {
		return nil, nil
	}
	// In a pod the hostname is the pod's name: each replica's Events say
	// which one saw the node.
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	ev, err := ks.Events(kube.EventsConfig{Host: host})
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, ev.Shutdown)
	return ev.Notify, nil
}

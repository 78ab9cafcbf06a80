package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ignition-mcs/mcs/insight"
	"github.com/ignition-mcs/mcs/serve"
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

// insightsEvery is how often, with --source kube, the health insights are
// brought in line with /status.
const insightsEvery = 30 * time.Second

// startInsights keeps, with --source kube, the Update Status API's health
// insights in line with what srv's /status shows, until ctx ends: only
// where the API server serves them (openshift/api PR #2233's CRD).
func startInsights(ctx context.Context, kubeconfig string, src source.Source, srv *serve.Server, log *slog.Logger) error {
	if _, ok := src.(*kube.Source); !ok {
		return nil
	}
	rc, err := restConfig(kubeconfig)
	if err != nil {
		return err
	}
	w, err := kube.NewInsightWriter(rc, "mcs", nil)
	if err != nil {
		return err
	}
	go func() {
		t := time.NewTicker(insightsEvery)
		defer t.Stop()
		insight.Keep(ctx, w, srv.Status, t.C, time.Now, log)
	}()
	return nil
}

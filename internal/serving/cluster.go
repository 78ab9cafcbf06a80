package serving

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/insight"
	"github.com/ignition-mcs/mcs/render"
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
func (c *Config) startInsights(ctx context.Context, src source.Source, srv *serve.Server, log *slog.Logger) error {
	if _, ok := src.(*kube.Source); !ok {
		return nil
	}
	rc, err := c.REST()
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
		insight.Keep(ctx, w.Sync, srv.Status, t.C, time.Now, cmp.Or(c.Runbooks, insight.DefaultRunbooks), log)
	}()
	return nil
}

// maxSpec settles the spec ceiling a server renders and serves under, and
// says where it came from, for the log and /status. --max-spec or --spec
// given, or a server reading files, keep the flags'. A server reading a
// cluster (mcs start, --source kube) without them takes the newest spec
// the release a rollback would return to reads (the ClusterVersion's
// history, as mcs admit does): the promise that no node and no release
// N-1 is asked to read a spec it cannot holds without a flag. Read once
// at start: the ceiling moves only with an update, which restarts mcs.
func (c *Config) maxSpec(ctx context.Context, log *slog.Logger) (render.Options, string) {
	ro := c.Render
	switch {
	case c.SpecGiven:
		return ro, fmt.Sprintf("%s (--spec)", ro.Spec)
	case c.MaxSpecGiven:
		return ro, fmt.Sprintf("%s (--max-spec)", ro.MaxSpec)
	case c.Source != "kube":
		return ro, fmt.Sprintf("%s (the newest mcs writes; set --max-spec to the newest your oldest reader reads)", convert.Newest)
	}
	rc, err := c.REST()
	if err != nil {
		return ro, "" // the source cannot connect either, and says why
	}
	var ceiling admit.Ceiling
	dyn, err := dynamic.NewForConfig(rc)
	if err == nil {
		ceiling, err = admit.CeilingFromCluster(ctx, dyn)
	}
	switch {
	case err != nil:
		log.Warn("max-spec: reading the cluster's ceiling failed; the newest mcs writes", "err", err, "maxSpec", convert.Newest.String())
		return ro, fmt.Sprintf("%s (the newest mcs writes: reading the ClusterVersion failed: %v; set --max-spec)", convert.Newest, err)
	case ceiling.Spec.IsZero():
		log.Info("max-spec: no ceiling from the cluster", "maxSpec", convert.Newest.String(), "source", ceiling.Source)
		return ro, fmt.Sprintf("%s (the newest mcs writes: %s)", convert.Newest, ceiling.Source)
	}
	ro.MaxSpec = ceiling.Spec
	log.Info("max-spec from the cluster", "maxSpec", ceiling.Spec.String(), "reader", ceiling.Reader, "source", ceiling.Source)
	return ro, fmt.Sprintf("%s, from the cluster: %s", ceiling.Spec, ceiling.Source)
}

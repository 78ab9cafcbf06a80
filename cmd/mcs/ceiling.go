package main

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
)

// maxSpec settles the spec ceiling a server renders and serves under, and
// says where it came from, for the log and /status. --max-spec or --spec
// given, or a server reading files, keep the flags'. A server reading a
// cluster (mcs start, --source kube) without them takes the newest spec
// the release a rollback would return to reads (the ClusterVersion's
// history, as mcs admit does): the promise that no node and no release
// N-1 is asked to read a spec it cannot holds without a flag. Read once
// at start: the ceiling moves only with an update, which restarts mcs.
func maxSpec(ctx context.Context, o *options, ro render.Options, log *slog.Logger) (render.Options, string) {
	switch {
	case o.set["spec"]:
		return ro, fmt.Sprintf("%s (--spec)", ro.Spec)
	case o.set["max-spec"]:
		return ro, fmt.Sprintf("%s (--max-spec)", ro.MaxSpec)
	case o.source != "kube":
		return ro, fmt.Sprintf("%s (the newest mcs writes; set --max-spec to the newest your oldest reader reads)", convert.Newest)
	}
	rc, err := restConfig(o.kubeAPIConfig)
	if err != nil {
		return ro, "" // the source cannot connect either, and says why
	}
	c, err := clusterCeiling(ctx, rc)
	switch {
	case err != nil:
		log.Warn("max-spec: reading the cluster's ceiling failed; the newest mcs writes", "err", err, "maxSpec", convert.Newest.String())
		return ro, fmt.Sprintf("%s (the newest mcs writes: reading the ClusterVersion failed: %v; set --max-spec)", convert.Newest, err)
	case c.Spec.IsZero():
		log.Info("max-spec: no ceiling from the cluster", "maxSpec", convert.Newest.String(), "source", c.Source)
		return ro, fmt.Sprintf("%s (the newest mcs writes: %s)", convert.Newest, c.Source)
	}
	ro.MaxSpec = c.Spec
	log.Info("max-spec from the cluster", "maxSpec", c.Spec.String(), "reader", c.Reader, "source", c.Source)
	return ro, fmt.Sprintf("%s, from the cluster: %s", c.Spec, c.Source)
}

// clusterCeiling reads the ClusterVersion.
func clusterCeiling(ctx context.Context, rc *rest.Config) (admit.Ceiling, error) {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return admit.Ceiling{}, err
	}
	return admit.CeilingFromCluster(ctx, dyn)
}

package admit

import (
	"context"
	"errors"
	"fmt"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/text"
	"github.com/ignition-mcs/mcs/releases"
)

// Ceiling is the newest spec a MachineConfig may need before the webhook
// warns (or refuses), and who could not read more.
type Ceiling struct {
	Spec convert.Version `json:"spec,omitzero"` // zero: no ceiling
	// Reader names, for warnings, what cannot read above Spec, e.g.
	// "OpenShift 4.18.7 (the release a rollback returns to)".
	Reader string `json:"reader,omitempty"`
	// Source says how the ceiling was found.
	Source string `json:"source"`
	// Reads is the newest spec the cluster's machine-config-operator reads,
	// which it validates every MachineConfig at (see lower's readable);
	// zero: not known, releases.NewestSpec.
	Reads convert.Version `json:"reads,omitzero"`
}

// clusterVersions is OpenShift's ClusterVersion resource.
var clusterVersions = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}

// CeilingFromCluster derives the ceiling from the cluster's ClusterVersion
// "version" (see releases.CeilingOf). A cluster without one (not
// OpenShift, or a bare API server) has no ceiling, which the result's
// Source says; an unreadable one is an error, so the caller can keep what
// it had.
func CeilingFromCluster(ctx context.Context, client dynamic.Interface) (Ceiling, error) {
	u, err := client.Resource(clusterVersions).Get(ctx, "version", metav1.GetOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return Ceiling{Source: "no ClusterVersion in the cluster (not OpenShift): lowest spec, no ceiling"}, nil
	}
	if err != nil {
		return Ceiling{}, fmt.Errorf("reading the ClusterVersion: %w", err)
	}
	var cv configv1.ClusterVersion
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cv); err != nil {
		return Ceiling{}, fmt.Errorf("reading the ClusterVersion: %w", err)
	}
	c, err := releases.CeilingOf(cv.Status.History)
	var re *releases.ReleaseError
	switch {
	case errors.Is(err, releases.ErrNoHistory):
		return Ceiling{Source: "the ClusterVersion has no status.history yet: lowest spec, no ceiling"}, nil
	case errors.As(err, &re):
		return Ceiling{}, fmt.Errorf("the ClusterVersion's history: %w", err)
	case err != nil:
		return Ceiling{}, err
	}
	reader := fmt.Sprintf("OpenShift %s (the release a rollback returns to)", c.Release.Version)
	if !c.Rollback {
		reader = fmt.Sprintf("OpenShift %s (the release the cluster runs)", c.Release.Version)
	}
	return Ceiling{Spec: c.Spec, Reader: reader, Source: c.Source(), Reads: c.Reads.Row.Spec}, nil
}

// FollowCeiling sets the webhook's ceiling from read at once and at every
// tick until ctx ends. A failed read keeps the ceiling in force (before the
// first success the webhook stays unready) and is logged; a change is
// logged.
func (w *Webhook) FollowCeiling(ctx context.Context, read func(context.Context) (Ceiling, error), ticks <-chan time.Time) {
	var last Ceiling
	known := false
	for {
		c, err := read(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			w.cfg.Logger.Warn("reading the ceiling failed; keeping the one in force", "err", text.ForLog(err.Error()), "ceiling", last.Spec.String(), "known", known)
		case err == nil && (!known || c != last):
			w.cfg.Logger.Info("ceiling", "spec", specOrNone(c.Spec), "source", text.ForLog(c.Source))
			w.SetCeiling(c)
			last, known = c, true
		}
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
	}
}

// specOrNone names a ceiling's spec for people and labels.
func specOrNone(v convert.Version) string {
	if v.IsZero() {
		return "none"
	}
	return v.String()
}

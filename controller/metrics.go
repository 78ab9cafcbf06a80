package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/internal/prom"
)

// metrics are the controller's; labels are bounded by the cluster's pools.
type metrics struct {
	leader      prometheus.Gauge
	renders     *prometheus.CounterVec // dry_run
	poolUpdates *prometheus.CounterVec // field (configuration, status), dry_run
	conflicts   prometheus.Counter
	prunes      *prometheus.CounterVec // dry_run
	// pruneRestores are pruned configs a pool or node named after the
	// checks, created again.
	pruneRestores prometheus.Counter
	lastWrite     *prometheus.GaugeVec // pool
	degraded      *prometheus.GaugeVec // pool
	syncSeconds   prometheus.Histogram
	waiting       *prometheus.GaugeVec // pool
	retries       prometheus.Counter
	events        *prometheus.CounterVec // reason
	// osImageURLOverride is upstream's os_image_url_override{pool}, under
	// its name so the alerts and dashboards written for it keep working.
	osImageURLOverride *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	f, registered := prom.With(reg)
	m := &metrics{
		leader:      f.NewGauge(prometheus.GaugeOpts{Name: "mcs_controller_leader", Help: "1 while this replica holds the Lease and writes, else 0."}),
		renders:     f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_controller_renders_written_total", Help: "Rendered MachineConfigs created (dry_run: sent with dryRun=All, so not stored)."}, []string{"dry_run"}),
		poolUpdates: f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_controller_pool_updates_total", Help: "Pool writes: spec.configuration pointed at a rendered config, or the status condition."}, []string{"field", "dry_run"}),
		conflicts:   f.NewCounter(prometheus.CounterOpts{Name: "mcs_controller_conflicts_total", Help: "Pool writes refused because the pool changed since it was read; each is read again and retried."}),
		prunes:      f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_controller_prunes_total", Help: "Rendered MachineConfigs deleted by pruning (dry_run: not deleted)."}, []string{"dry_run"}),
		pruneRestores: f.NewCounter(prometheus.CounterOpts{Name: "mcs_controller_prune_restores_total",
			Help: "Pruned rendered MachineConfigs a pool or node was found naming after the delete (a writer whose view lagged more than the grace), created again at once with the same content."}),
		lastWrite: f.NewGaugeVec(prometheus.GaugeOpts{Name: "mcs_controller_pool_last_write_timestamp_seconds", Help: "When this replica last wrote something for the pool."}, []string{"pool"}),
		degraded:  f.NewGaugeVec(prometheus.GaugeOpts{Name: "mcs_controller_render_degraded", Help: "1 when the pool's MachineConfigs do not render (it keeps its rendered config)."}, []string{"pool"}),
		syncSeconds: f.NewHistogram(prometheus.HistogramOpts{Name: "mcs_controller_sync_duration_seconds",
			Help: "Time to render every pool and write what differs.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 12)}),
		waiting: f.NewGaugeVec(prometheus.GaugeOpts{Name: "mcs_controller_render_pending", Help: "1 while the pool waits before it is written (a guard: its RenderPending condition says on what)."}, []string{"pool"}),
		retries: f.NewCounter(prometheus.CounterOpts{Name: "mcs_controller_retries_total", Help: "Pool writes that failed and were queued again with backoff."}),
		events:  f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_controller_events_total", Help: "Events recorded on pools, by reason."}, []string{"reason"}),
		osImageURLOverride: f.NewGaugeVec(prometheus.GaugeOpts{Name: "os_image_url_override",
			Help: "state of OS image override: 1 when the pool's MachineConfigs override the release's OS image (upstream's metric)."}, []string{"pool"}),
	}
	if err := registered(); err != nil {
		return nil, err
	}
	return m, nil
}

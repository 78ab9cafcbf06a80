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
	lastWrite   *prometheus.GaugeVec   // pool
	degraded    *prometheus.GaugeVec   // pool
	syncSeconds prometheus.Histogram
	waiting     *prometheus.GaugeVec // pool
	retries     prometheus.Counter
	events      *prometheus.CounterVec // reason
	// osImageURLOverride is upstream's os_image_url_override{pool}, under
	// its name so the alerts and dashboards written for it keep working.
	osImageURLOverride *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		leader:      prom.Gauge("mcs_controller_leader", "1 while this replica holds the Lease and writes, else 0."),
		renders:     prom.CounterVec("mcs_controller_renders_written_total", "Rendered MachineConfigs created (dry_run: sent with dryRun=All, so not stored).", "dry_run"),
		poolUpdates: prom.CounterVec("mcs_controller_pool_updates_total", "Pool writes: spec.configuration pointed at a rendered config, or the status condition.", "field", "dry_run"),
		conflicts:   prom.Counter("mcs_controller_conflicts_total", "Pool writes refused because the pool changed since it was read; each is read again and retried."),
		prunes:      prom.CounterVec("mcs_controller_prunes_total", "Rendered MachineConfigs deleted by pruning (dry_run: not deleted).", "dry_run"),
		lastWrite:   prom.GaugeVec("mcs_controller_pool_last_write_timestamp_seconds", "When this replica last wrote something for the pool.", "pool"),
		degraded:    prom.GaugeVec("mcs_controller_render_degraded", "1 when the pool's MachineConfigs do not render (it keeps its rendered config).", "pool"),
		syncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "mcs_controller_sync_duration_seconds",
			Help: "Time to render every pool and write what differs.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 12)}),
		waiting: prom.GaugeVec("mcs_controller_render_pending", "1 while the pool waits before it is written (a guard: its RenderPending condition says on what).", "pool"),
		retries: prom.Counter("mcs_controller_retries_total", "Pool writes that failed and were queued again with backoff."),
		events:  prom.CounterVec("mcs_controller_events_total", "Events recorded on pools, by reason.", "reason"),
		osImageURLOverride: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "os_image_url_override",
			Help: "state of OS image override: 1 when the pool's MachineConfigs override the release's OS image (upstream's metric)."}, []string{"pool"}),
	}
	if err := prom.Register(reg, m.leader, m.renders, m.poolUpdates, m.conflicts, m.prunes, m.lastWrite, m.degraded, m.syncSeconds,
		m.waiting, m.retries, m.events, m.osImageURLOverride); err != nil {
		return nil, err
	}
	return m, nil
}

package controller

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
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
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mcs_controller_leader",
			Help: "1 while this replica holds the Lease and writes, else 0."}),
		renders: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcs_controller_renders_written_total",
			Help: "Rendered MachineConfigs created (dry_run: sent with dryRun=All, so not stored)."}, []string{"dry_run"}),
		poolUpdates: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcs_controller_pool_updates_total",
			Help: "Pool writes: spec.configuration pointed at a rendered config, or the status condition."}, []string{"field", "dry_run"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: "mcs_controller_conflicts_total",
			Help: "Pool writes refused because the pool changed since it was read; each is read again and retried."}),
		prunes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcs_controller_prunes_total",
			Help: "Rendered MachineConfigs deleted by pruning (dry_run: not deleted)."}, []string{"dry_run"}),
		lastWrite: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mcs_controller_pool_last_write_timestamp_seconds",
			Help: "When this replica last wrote something for the pool."}, []string{"pool"}),
		degraded: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mcs_controller_render_degraded",
			Help: "1 when the pool's MachineConfigs do not render (it keeps its rendered config)."}, []string{"pool"}),
		syncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "mcs_controller_sync_duration_seconds",
			Help: "Time to render every pool and write what differs.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 12)}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.leader, m.renders, m.poolUpdates, m.conflicts, m.prunes, m.lastWrite, m.degraded, m.syncSeconds} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	return m, nil
}

package status

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/internal/prom"
)

// renderMetrics are the status recorder's: how renders went, and when
// nodes first fetched what they produced.
type renderMetrics struct {
	gen      prometheus.Gauge
	duration prometheus.Histogram
	errors   prometheus.Counter
	failing  prometheus.Gauge
	lastOK   prometheus.Gauge
	stuck    prometheus.Gauge
	// stuckTotal counts loads that ran past the timeout.
	stuckTotal prometheus.Counter
	encoded    prometheus.Counter
	carried    prometheus.Counter
	firsts     *prometheus.CounterVec // pool
	firstTime  *prometheus.GaugeVec   // pool
}

func newRenderMetrics(reg prometheus.Registerer) (*renderMetrics, error) {
	f, registered := prom.With(reg)
	m := &renderMetrics{
		duration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "mcs_render_duration_seconds",
			Help:    "Time to load, render and precompute every pool.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		errors:     f.NewCounter(prometheus.CounterOpts{Name: "mcs_render_errors_total", Help: "Renders that failed; what was served before (if anything) stays served."}),
		gen:        f.NewGauge(prometheus.GaugeOpts{Name: "mcs_render_generation", Help: "Generation of the snapshot being served; increases with every successful render."}),
		failing:    f.NewGauge(prometheus.GaugeOpts{Name: "mcs_render_failing", Help: "1 while the newest render attempt failed and an older snapshot is served."}),
		lastOK:     f.NewGauge(prometheus.GaugeOpts{Name: "mcs_render_last_success_timestamp_seconds", Help: "Unix time of the last successful render."}),
		stuck:      f.NewGauge(prometheus.GaugeOpts{Name: "mcs_reload_stuck", Help: "1 while a load and render of the source runs past --reload-timeout; what was served before (if anything) stays served."}),
		stuckTotal: f.NewCounter(prometheus.CounterOpts{Name: "mcs_reload_stuck_total", Help: "Loads and renders of the source that ran past --reload-timeout."}),
		encoded:    f.NewCounter(prometheus.CounterOpts{Name: "mcs_render_pools_rerendered_total", Help: "Pools whose responses a served render encoded anew (their inputs changed)."}),
		carried:    f.NewCounter(prometheus.CounterOpts{Name: "mcs_render_pools_carried_total", Help: "Pools whose responses a served render carried over unchanged from the one before."}),
		firsts:     f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_first_fetches_total", Help: "Rendered configs fetched for the first time by an Ignition client, by pool."}, []string{"pool"}),
		firstTime:  f.NewGaugeVec(prometheus.GaugeOpts{Name: "mcs_first_fetch_timestamp_seconds", Help: "Unix time an Ignition client first fetched the rendered config the pool serves; 0 until one has."}, []string{"pool"}),
	}
	return m, registered()
}

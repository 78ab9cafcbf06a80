package serve

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/internal/prom"
	"github.com/ignition-mcs/mcs/skewgate"
)

// metrics are the HTTP server's, on a registry the caller passes in, so
// tests and embedders get their own and nothing touches the global one.
type metrics struct {
	requests    *prometheus.CounterVec   // pool, spec, code
	duration    *prometheus.HistogramVec // route
	servedBytes *prometheus.CounterVec   // pool, spec
	clients     *prometheus.CounterVec   // ignition
	skew        *prometheus.CounterVec   // pool, decision, reason
	refusals    *prometheus.CounterVec   // cause
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	f, registered := prom.With(reg)
	m := &metrics{
		requests:    f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_requests_total", Help: "Config requests by pool, spec version served and HTTP status code."}, []string{"pool", "spec", "code"}),
		servedBytes: f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_served_bytes_total", Help: "Config body bytes written, by pool and spec version."}, []string{"pool", "spec"}),
		clients:     f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_client_requests_total", Help: "Config requests by the client's Ignition version (major.minor; other or none when unrecognised)."}, []string{"ignition"}),
		skew:        f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_skew_decisions_total", Help: "Boot-image skew decisions by pool, decision (admit, stub) and reason."}, []string{"pool", "decision", "reason"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcs_request_duration_seconds",
			Help:    "Time to answer a request, by route.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"route"}),
		refusals: f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_config_refusals_total", Help: "Config requests answered without a config, by cause (docs/reliability.md); Ignition retries the 5xx causes."}, []string{"cause"}),
	}
	// Every cause is exposed from the start, at 0: an alert's increase()
	// then sees a node's first refusal, not only those after it.
	for _, a := range contract {
		m.refusals.WithLabelValues(string(a.Cause))
	}
	return m, registered()
}

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

// clientLabel bounds the ignition label: a User-Agent becomes "v2.27", or
// "other" / "none", so a flood of bogus agents cannot grow the series.
func clientLabel(ua string) string {
	if ua == "" {
		return "none"
	}
	v, ok := skewgate.ParseUserAgent(ua)
	if !ok || (v.Major != 0 && v.Major != 2) || v.Minor > 99 {
		return "other"
	}
	return "v" + strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor)
}

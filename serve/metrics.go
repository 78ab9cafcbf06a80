package serve

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/internal/prom"
	"github.com/ignition-mcs/mcs/skewgate"
)

// metrics live on a registry the caller passes in, so tests and embedders
// get their own and nothing touches the global one.
type metrics struct {
	requests       *prometheus.CounterVec   // pool, spec, code
	duration       *prometheus.HistogramVec // route
	servedBytes    *prometheus.CounterVec   // pool, spec
	clients        *prometheus.CounterVec   // ignition
	renderGen      prometheus.Gauge
	renderDuration prometheus.Histogram
	renderErrors   prometheus.Counter
	renderFailing  prometheus.Gauge
	renderLastOK   prometheus.Gauge
	skew           *prometheus.CounterVec // pool, decision, reason
	reloadStuck    prometheus.Gauge
	// reloadStuckTotal counts loads that ran past the timeout.
	reloadStuckTotal prometheus.Counter
	refusals         *prometheus.CounterVec // cause
	poolsEncoded     prometheus.Counter
	poolsCarried     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests:    prom.CounterVec("mcs_requests_total", "Config requests by pool, spec version served and HTTP status code.", "pool", "spec", "code"),
		servedBytes: prom.CounterVec("mcs_served_bytes_total", "Config body bytes written, by pool and spec version.", "pool", "spec"),
		clients: prom.CounterVec("mcs_client_requests_total",
			"Config requests by the client's Ignition version (major.minor; other or none when unrecognised).", "ignition"),
		skew: prom.CounterVec("mcs_skew_decisions_total", "Boot-image skew decisions by pool, decision (admit, stub) and reason.", "pool", "decision", "reason"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcs_request_duration_seconds",
			Help:    "Time to answer a request, by route.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"route"}),
		renderDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mcs_render_duration_seconds",
			Help:    "Time to load, render and precompute every pool.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		renderErrors:     prom.Counter("mcs_render_errors_total", "Renders that failed; the last good snapshot kept serving."),
		renderGen:        prom.Gauge("mcs_render_generation", "Generation of the snapshot being served; increases with every successful render."),
		renderFailing:    prom.Gauge("mcs_render_failing", "1 while the newest render attempt failed and an older snapshot is served."),
		renderLastOK:     prom.Gauge("mcs_render_last_success_timestamp_seconds", "Unix time of the last successful render."),
		reloadStuck:      prom.Gauge("mcs_reload_stuck", "1 while a load and render of the source runs past --reload-timeout; the last good render is served."),
		reloadStuckTotal: prom.Counter("mcs_reload_stuck_total", "Loads and renders of the source that ran past --reload-timeout."),
		refusals: prom.CounterVec("mcs_config_refusals_total",
			"Config requests answered without a config, by cause (docs/reliability.md); Ignition retries the 5xx causes.", "cause"),
		poolsEncoded: prom.Counter("mcs_render_pools_rerendered_total", "Pools whose responses a served render encoded anew (their inputs changed)."),
		poolsCarried: prom.Counter("mcs_render_pools_carried_total", "Pools whose responses a served render carried over unchanged from the one before."),
	}
	reg.MustRegister(m.requests, m.duration, m.servedBytes, m.clients, m.renderGen,
		m.renderDuration, m.renderErrors, m.renderFailing, m.renderLastOK, m.skew, m.reloadStuck, m.reloadStuckTotal, m.refusals,
		m.poolsEncoded, m.poolsCarried)
	return m
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

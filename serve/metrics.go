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

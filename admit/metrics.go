package admit

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	reviews  *prometheus.CounterVec
	latency  prometheus.Histogram
	ceilingG *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcs_admit_reviews_total",
			Help: "AdmissionReviews answered, by outcome: lowered (patched to a lower spec), unchanged (at its lowest spec already), denied (above the ceiling), ignored (not a MachineConfig write), bad (not a review, or over the size cap), busy (no review slot free within the wait: answered 503, the API server applies the failurePolicy), and, stored as written with a warning, spec2 (OpenShift converts it), invalid (does not parse), refused (parses; the cluster's machine-config-operator refuses it at its newer spec), unprovable (no lower spec proved lossless), costly (too many items to prove, or the review's time ran out, or its client went).",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mcs_admit_review_duration_seconds",
			Help:    "Time to answer one AdmissionReview, body read included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		ceilingG: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mcs_admit_ceiling_info",
			Help: "1 for the ceiling in force (spec \"none\" without one).",
		}, []string{"spec"}),
	}
	reg.MustRegister(m.reviews, m.latency, m.ceilingG)
	return m
}

func (m *metrics) observe(outcome string, d time.Duration) {
	m.reviews.WithLabelValues(outcome).Inc()
	m.latency.Observe(d.Seconds())
}

func (m *metrics) ceiling(c Ceiling) {
	m.ceilingG.Reset()
	m.ceilingG.WithLabelValues(specOrNone(c.Spec)).Set(1)
}

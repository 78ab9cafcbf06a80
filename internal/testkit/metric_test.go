package testkit

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	fetches := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcs_test_fetches_total", Help: "h"}, []string{"pool", "code"})
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "mcs_test_backlog", Help: "h"})
	untyped := prometheus.NewUntypedFunc(prometheus.UntypedOpts{Name: "mcs_test_untyped", Help: "h"}, func() float64 { return 7 })
	reg.MustRegister(fetches, gauge, untyped)
	gauge.Set(3)
	fetches.WithLabelValues("worker", "200").Add(2)
	fetches.WithLabelValues("master", "200").Add(5)
	for _, c := range []struct {
		name   string
		metric string
		labels []string
		want   float64
		ok     bool
	}{
		{"gauge", "mcs_test_backlog", nil, 3, true},
		{"untyped", "mcs_test_untyped", nil, 7, true},
		{"counter by one label", "mcs_test_fetches_total", []string{"pool", "master"}, 5, true},
		{"counter by two labels", "mcs_test_fetches_total", []string{"code", "200", "pool", "worker"}, 2, true},
		{"no such series", "mcs_test_fetches_total", []string{"pool", "infra"}, 0, false},
		{"no such family", "mcs_test_none", nil, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, ok := Metric(t, reg, c.metric, c.labels...); got != c.want || ok != c.ok {
				t.Errorf("Metric(%s, %q) = %v, %v; want %v, %v", c.metric, c.labels, got, ok, c.want, c.ok)
			}
		})
	}
}

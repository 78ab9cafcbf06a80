package testkit

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric is the value of the first counter, gauge or untyped series of the
// family name in g that carries labels (name=value pairs), and whether
// there is one: a vector with no series yet is not gathered at all, which
// a caller may read as 0 or as a failure. A failed Gather fails tb.
func Metric(tb testing.TB, g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	tb.Helper()
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Untyped != nil:
				return m.GetUntyped().GetValue(), true
			}
		}
	}
	return 0, false
}

// hasLabels reports whether m carries every name=value pair of labels.
func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == labels[i] && l.GetValue() == labels[i+1] }) {
			return false
		}
	}
	return true
}

package promrules

import (
	"fmt"
	"io"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Exposed is the set of series names a scrape in the text format exposes:
// each family's name, with _bucket, _sum and _count for a histogram and
// _sum and _count for a summary, as a rule reads them. A family with no
// series (a vector no label value has been used with) is not exposed, as
// Prometheus would see it.
func Exposed(scrape io.Reader) (map[string]bool, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(scrape)
	if err != nil {
		return nil, fmt.Errorf("reading the scrape: %w", err)
	}
	names := map[string]bool{}
	for name, f := range families {
		if len(f.GetMetric()) == 0 {
			continue
		}
		names[name] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name+"_sum"], names[name+"_count"] = true, true
		}
	}
	return names, nil
}

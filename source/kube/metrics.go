package kube

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ignition-mcs/mcs/internal/prom"
)

// metrics are the source's own; the server's render metrics report what
// the failures cost.
type metrics struct {
	up     prometheus.Gauge
	errors prometheus.Counter
	events *prometheus.CounterVec
	// policyErrors counts versions of the cluster's MachineConfiguration
	// that did not parse as a skew policy.
	policyErrors prometheus.Counter
	// backlog is the MachineConfig changes seen and not read yet.
	backlog prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	f, registered := prom.With(reg)
	m := &metrics{
		up:           f.NewGauge(prometheus.GaugeOpts{Name: "mcs_kube_api_up", Help: "1 when the last request to the Kubernetes API server succeeded, 0 while it is failing."}),
		errors:       f.NewCounter(prometheus.CounterOpts{Name: "mcs_kube_api_errors_total", Help: "Failed requests and broken watches to the Kubernetes API server."}),
		events:       f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_kube_events_total", Help: "Object changes that can change what is served, by resource."}, []string{"resource"}),
		backlog:      f.NewGauge(prometheus.GaugeOpts{Name: "mcs_kube_backlog_objects", Help: "Changed MachineConfigs the source has seen and not read yet (self mode); read with one LIST once --kube-backlog-list wait."}),
		policyErrors: f.NewCounter(prometheus.CounterOpts{Name: "mcs_kube_skew_policy_errors_total", Help: "Versions of the cluster's MachineConfiguration whose skew policy was invalid; the last good one stays in force."}),
	}
	for _, r := range []schema.GroupVersionResource{MachineConfigs, MachineConfigPools, ControllerConfigs, MachineConfigurations} {
		m.events.WithLabelValues(r.Resource)
	}
	if err := registered(); err != nil {
		return nil, err
	}
	return m, nil
}

package main

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/ignition-mcs/mcs/serve"
)

// certMetrics tell a monitoring system that a rotation failed.
type certMetrics struct {
	failing prometheus.Gauge
	errors  prometheus.Counter
}

func newCertMetrics(f promauto.Factory) *certMetrics {
	m := &certMetrics{
		failing: f.NewGauge(prometheus.GaugeOpts{Name: "mcs_tls_certificate_reload_failing", Help: "1 while the TLS certificate pair on disk does not load and the previous one is served."}),
		errors:  f.NewCounter(prometheus.CounterOpts{Name: "mcs_tls_certificate_reload_errors_total", Help: "Certificate pairs on disk that did not load (each counted once, not per handshake)."}),
	}
	return m
}

// certReport is what a failed or recovered certificate reload does: an
// ERROR naming the files and the reason, the metrics, and srv's /status
// condition and notices.
func certReport(log *slog.Logger, m *certMetrics, srv *serve.Server) func(error) {
	return func(err error) {
		if err != nil {
			log.Error("TLS certificate not reloaded; serving the previous one", "err", err)
			m.failing.Set(1)
			m.errors.Inc()
		} else {
			log.Info("TLS certificate loaded")
			m.failing.Set(0)
		}
		srv.CertificateReload(err)
	}
}

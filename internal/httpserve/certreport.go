package httpserve

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/internal/prom"
)

// CertReport is what a failed or recovered certificate reload does, as
// Config.CertReport: an ERROR naming the files and the reason, the
// metrics on reg that tell a monitoring system a rotation failed, and
// then also (the server's /status, say).
func CertReport(log *slog.Logger, reg prometheus.Registerer, also func(error)) (func(error), error) {
	f, registered := prom.With(reg)
	failing := f.NewGauge(prometheus.GaugeOpts{Name: "mcs_tls_certificate_reload_failing", Help: "1 while the TLS certificate pair on disk does not load and the previous one is served."})
	errs := f.NewCounter(prometheus.CounterOpts{Name: "mcs_tls_certificate_reload_errors_total", Help: "Certificate pairs on disk that did not load (each counted once, not per handshake)."})
	if err := registered(); err != nil {
		return nil, err
	}
	return func(err error) {
		if err != nil {
			log.Error("TLS certificate not reloaded; serving the previous one", "err", err)
			failing.Set(1)
			errs.Inc()
		} else {
			log.Info("TLS certificate loaded")
			failing.Set(0)
		}
		if also != nil {
			also(err)
		}
	}, nil
}

package serving

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/ignition-mcs/mcs/internal/httpserve"
	"github.com/ignition-mcs/mcs/netlimit"
	"github.com/ignition-mcs/mcs/serve"
)

// connLimits are the configured limits, --max-connections lowered to what
// the open-file limit leaves.
func (c *Config) connLimits(log *slog.Logger) netlimit.Limits {
	lim := netlimit.Limits{Max: c.MaxConns, PerClient: c.MaxPerClient, Slack: c.WriteStall, MinRate: c.MinWriteRate}
	if fit, lowered := netlimit.FitOpenFiles(lim.Max); lowered {
		log.Info("--max-connections lowered to fit the open-file limit", "max-connections", fit, "reserved", netlimit.FDReserve)
		lim.Max = fit
	}
	return lim
}

// Listeners is what Listen needs besides the Config; a zero field gets a
// default.
type Listeners struct {
	Conns      *netlimit.Table // default: a table of its own, with the Config's limits
	CertReport func(error)     // told each change of the certificate's reload outcome
	Admin      http.Handler    // served on --listen-admin
	Nodes      http.Handler    // served on the node ports instead of the whole server (mcs start)
}

// certRecheck is how often the certificate files are read again: a
// rotation serves within it, and a failed one is reported even while no
// node connects.
const certRecheck = time.Second

// Listen opens the listeners c asks for, serving h. The TLS one needs a
// certificate; without one it is off, with a warning, unless TLSAsked.
func (c *Config) Listen(h http.Handler, log *slog.Logger, ls Listeners) ([]httpserve.Server, error) {
	if ls.Conns == nil {
		ls.Conns = netlimit.NewTable(c.connLimits(log), nil, log, nil)
	}
	if c.AdminOnly && c.ListenAdmin == "" {
		return nil, errors.New("--admin-only needs --listen-admin: /status and /metrics would be served nowhere")
	}
	if ls.Nodes != nil {
		h = ls.Nodes
	}
	hc := httpserve.Config{
		Plain: httpserve.Addr{Addr: c.ListenPlain, Setting: "--listen-plain"},
		Admin: httpserve.Addr{Addr: c.ListenAdmin, Setting: "--listen-admin"}, Handler: h, AdminHandler: ls.Admin,
		AdminDesc: " (admin: /status, /metrics, /healthz, /readyz without a token)",
		Cert:      c.Cert, Key: c.Key, CertRecheck: certRecheck, CertReport: ls.CertReport, TLSConfig: c.TLS, HTTP2: c.HTTP2,
		ReadHeaderTimeout: c.ReadHeaderTimeout, WriteTimeout: c.WriteTimeout, IdleTimeout: c.IdleTimeout,
		Conns: ls.Conns, ConnContext: serve.ConnContext, Log: log,
	}
	if hc.TLSConfig == nil {
		hc.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	switch {
	case c.ListenTLS != "" && c.Cert != "":
		hc.TLS = httpserve.Addr{Addr: c.ListenTLS, Setting: "--listen-tls"}
	case c.ListenTLS != "" && c.TLSAsked:
		return nil, errors.New("--listen-tls needs --cert and --key")
	case c.ListenTLS != "":
		log.Warn("TLS listener off: no --cert/--key given")
	}
	if hc.Plain.Addr == "" && hc.TLS.Addr == "" {
		return nil, errors.New("no listener: set --listen-plain, or --listen-tls with --cert and --key")
	}
	return httpserve.Listen(hc)
}

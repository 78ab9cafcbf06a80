package main

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/ignition-mcs/mcs/internal/httpserve"
	"github.com/ignition-mcs/mcs/netlimit"
	"github.com/ignition-mcs/mcs/serve"
)

// connLimits are the options' limits, --max-connections lowered to what
// the open-file limit leaves.
func (o *options) connLimits(log *slog.Logger) netlimit.Limits {
	lim := netlimit.Limits{Max: o.maxConns, PerClient: o.maxPerClient, Slack: o.writeStall, MinRate: o.minWriteRate}
	if fit, lowered := netlimit.FitOpenFiles(lim.Max); lowered {
		log.Info("--max-connections lowered to fit the open-file limit", "max-connections", fit, "reserved", netlimit.FDReserve)
		lim.Max = fit
	}
	return lim
}

// listenDeps is what listen needs besides the options; a zero field gets
// a default.
type listenDeps struct {
	conns      *netlimit.Table // default: a table of its own, with the options' limits
	certReport func(error)     // told each change of the certificate's reload outcome
	admin      http.Handler    // served on --listen-admin
	nodes      http.Handler    // served on the node ports instead of the whole server (mcs start)
}

// certRecheck is how often the certificate files are read again: a
// rotation serves within it, and a failed one is reported even while no
// node connects.
const certRecheck = time.Second

// listen opens the listeners the options ask for. The TLS one needs a
// certificate; without one it is off, with a warning, unless it was asked
// for by name (--listen-tls, --secure-port or MCS_LISTEN_TLS).
func listen(o *options, h http.Handler, log *slog.Logger, ls listenDeps) ([]httpserve.Server, error) {
	if ls.conns == nil {
		ls.conns = netlimit.NewTable(o.connLimits(log), nil, log, nil)
	}
	if ls.nodes != nil {
		h = ls.nodes
	}
	c := httpserve.Config{
		Plain: httpserve.Addr{Addr: o.listenPlain, Setting: "--listen-plain"},
		Admin: httpserve.Addr{Addr: o.listenAdmin, Setting: "--listen-admin"}, Handler: h, AdminHandler: ls.admin,
		AdminDesc: " (admin: /status, /metrics, /healthz, /readyz without a token)",
		Cert:      o.cert, Key: o.key, CertRecheck: certRecheck, CertReport: ls.certReport, TLSConfig: o.tls.config(), HTTP2: o.http2,
		ReadHeaderTimeout: o.readHeaderTimeout, WriteTimeout: o.writeTimeout, IdleTimeout: o.idleTimeout,
		Conns: ls.conns, ConnContext: serve.ConnContext, Log: log,
	}
	switch {
	case o.listenTLS != "" && o.cert != "":
		c.TLS = httpserve.Addr{Addr: o.listenTLS, Setting: "--listen-tls"}
	case o.listenTLS != "" && (o.set["listen-tls"] || o.set["secure-port"]):
		return nil, errors.New("--listen-tls needs --cert and --key")
	case o.listenTLS != "":
		log.Warn("TLS listener off: no --cert/--key given")
	}
	if c.Plain.Addr == "" && c.TLS.Addr == "" {
		return nil, errors.New("no listener: set --listen-plain, or --listen-tls with --cert and --key")
	}
	return httpserve.Listen(c)
}

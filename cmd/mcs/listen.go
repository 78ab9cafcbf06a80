package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ignition-mcs/mcs/internal/reload"
	"github.com/ignition-mcs/mcs/netlimit"
	"github.com/ignition-mcs/mcs/serve"
)

// server is one listener and the HTTP server on it.
type server struct {
	srv  *http.Server
	ln   net.Listener
	tls  bool
	desc string
}

func (s server) serve() error {
	if s.tls {
		return s.srv.ServeTLS(s.ln, "", "")
	}
	return s.srv.Serve(s.ln)
}

func newHTTPServer(o *options, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           refuseBodies(h),
		ReadHeaderTimeout: o.readHeaderTimeout,
		ReadTimeout:       o.readHeaderTimeout + 5*time.Second, // no request has a body to wait for
		WriteTimeout:      o.writeTimeout,
		IdleTimeout:       o.idleTimeout,
		MaxHeaderBytes:    64 << 10,
		// Its lines (TLS handshakes failing, bad requests) are anyone's to
		// cause: the throttle of newLogger keys them by their text.
		ErrorLog:  slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ConnState: netlimit.ConnState,
		// A body of pieces finds its connection there, to send the
		// header in its writev (serve.ConnContext).
		ConnContext: serve.ConnContext,
	}
}

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

// listen opens the listeners the options ask for. The
// TLS one needs a certificate; without one it is off, with a warning,
// unless it was asked for by name (--listen-tls, --secure-port or
// MCS_LISTEN_TLS).
func listen(o *options, h http.Handler, log *slog.Logger, ls listenDeps) (out []server, err error) {
	if ls.conns == nil {
		ls.conns = netlimit.NewTable(o.connLimits(log), nil, log, nil)
	}
	conns := ls.conns
	if ls.nodes != nil {
		h = ls.nodes
	}
	defer func() {
		if err != nil {
			for _, s := range out {
				s.ln.Close()
			}
		}
	}()
	if o.listenPlain != "" {
		ln, err := net.Listen("tcp", o.listenPlain)
		if err != nil {
			return out, fmt.Errorf("--listen-plain: %w", err)
		}
		out = append(out, server{srv: newHTTPServer(o, h, log), ln: conns.Listener(ln), desc: "http://" + ln.Addr().String()})
	}
	switch {
	case o.listenTLS != "" && o.cert != "":
		s, err := listenTLS(o, h, log, ls)
		if err != nil {
			return out, err
		}
		out = append(out, s)
	case o.listenTLS != "" && (o.set["listen-tls"] || o.set["secure-port"]):
		return out, errors.New("--listen-tls needs --cert and --key")
	case o.listenTLS != "":
		log.Warn("TLS listener off: no --cert/--key given")
	}
	if len(out) == 0 {
		return out, errors.New("no listener: set --listen-plain, or --listen-tls with --cert and --key")
	}
	if o.listenAdmin != "" && ls.admin != nil {
		ln, err := net.Listen("tcp", o.listenAdmin)
		if err != nil {
			return out, fmt.Errorf("--listen-admin: %w", err)
		}
		out = append(out, server{srv: newHTTPServer(o, ls.admin, log), ln: ln, desc: "http://" + ln.Addr().String() + " (admin: /status, /metrics, /healthz, /readyz without a token)"})
	}
	return out, nil
}

// listenTLS opens the TLS listener, serving the newest certificate on disk
// and HTTP/1.1 only unless --http2.
func listenTLS(o *options, h http.Handler, log *slog.Logger, ls listenDeps) (server, error) {
	cr, err := reload.NewCertPair(o.cert, o.key, ls.certReport)
	if err != nil {
		return server{}, err
	}
	if ls.certReport != nil {
		ls.certReport(nil) // TLS is on, its pair loaded
	}
	ln, err := net.Listen("tcp", o.listenTLS)
	if err != nil {
		return server{}, fmt.Errorf("--listen-tls: %w", err)
	}
	s := newHTTPServer(o, h, log)
	ctx, stop := context.WithCancel(context.Background())
	s.RegisterOnShutdown(stop)
	go cr.Run(ctx, certRecheck)
	s.TLSConfig = o.tls.config()
	s.TLSConfig.GetCertificate = cr.GetCertificate
	if o.http2 {
		s.TLSConfig.NextProtos = []string{"h2", "http/1.1"}
	} else {
		// A non-nil, empty map turns HTTP/2 off.
		s.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		s.TLSConfig.NextProtos = []string{"http/1.1"}
	}
	return server{srv: s, ln: ls.conns.Listener(ln), tls: true, desc: "https://" + ln.Addr().String()}, nil
}

// certRecheck is how often the certificate files are read again: a
// rotation serves within it, and a failed one is reported even while no
// node connects.
const certRecheck = time.Second

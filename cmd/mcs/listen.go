package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
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
		Handler:           h,
		ReadHeaderTimeout: o.readHeaderTimeout,
		ReadTimeout:       o.readHeaderTimeout + 5*time.Second, // no request has a body to wait for
		WriteTimeout:      o.writeTimeout,
		IdleTimeout:       o.idleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// listen opens the listeners the options ask for. The TLS one needs a
// certificate; without one it is off, with a warning, unless it was asked
// for by name (--listen-tls, --secure-port or MCS_LISTEN_TLS).
func listen(o *options, h http.Handler, log *slog.Logger) (out []server, err error) {
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
		out = append(out, server{srv: newHTTPServer(o, h, log), ln: ln, desc: "http://" + ln.Addr().String()})
	}
	switch {
	case o.listenTLS != "" && o.cert != "":
		s, err := listenTLS(o, h, log)
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
	if a, ok := h.(interface{ AdminHandler() http.Handler }); ok && o.listenAdmin != "" {
		ln, err := net.Listen("tcp", o.listenAdmin)
		if err != nil {
			return out, fmt.Errorf("--listen-admin: %w", err)
		}
		out = append(out, server{srv: newHTTPServer(o, a.AdminHandler(), log), ln: ln, desc: "http://" + ln.Addr().String() + " (admin: /status, /metrics, /healthz, /readyz without a token)"})
	}
	return out, nil
}

// listenTLS opens the TLS listener, serving the newest certificate on disk
// and HTTP/1.1 only unless --http2.
func listenTLS(o *options, h http.Handler, log *slog.Logger) (server, error) {
	cr := &certReloader{cert: o.cert, key: o.key}
	if _, err := cr.get(nil); err != nil {
		return server{}, err
	}
	ln, err := net.Listen("tcp", o.listenTLS)
	if err != nil {
		return server{}, fmt.Errorf("--listen-tls: %w", err)
	}
	s := newHTTPServer(o, h, log)
	s.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cr.get}
	if o.http2 {
		s.TLSConfig.NextProtos = []string{"h2", "http/1.1"}
	} else {
		// A non-nil, empty map turns HTTP/2 off.
		s.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		s.TLSConfig.NextProtos = []string{"http/1.1"}
	}
	return server{srv: s, ln: ln, tls: true, desc: "https://" + ln.Addr().String()}, nil
}

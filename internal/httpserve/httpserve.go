// Package httpserve opens the listeners mcs serves on and builds their HTTP servers: timeouts, no request bodies, connection limits, and TLS from a certificate pair re-read from disk.
package httpserve

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ignition-mcs/mcs/internal/reload"
	"github.com/ignition-mcs/mcs/netlimit"
)

// Addr is a listen address and the setting that gave it, which errors
// name (e.g. "--listen-plain"); an empty Addr listens nowhere.
type Addr struct{ Addr, Setting string }

// Config is what Listen opens.
type Config struct {
	// Plain and TLS serve Handler; Admin serves AdminHandler, without the
	// connection limits (it is for the cluster's own monitoring).
	Plain, TLS, Admin Addr
	Handler           http.Handler
	AdminHandler      http.Handler
	// AdminDesc is said after the admin listener's address.
	AdminDesc string

	// Cert and Key are the TLS listener's pair, re-read every
	// CertRecheck; CertReport is told each change of its reload outcome.
	Cert, Key   string
	CertRecheck time.Duration
	CertReport  func(error)
	TLSConfig   *tls.Config // versions and suites; GetCertificate is set here
	HTTP2       bool        // allow HTTP/2 on TLS

	ReadHeaderTimeout, WriteTimeout, IdleTimeout time.Duration
	Conns                                        *netlimit.Table
	// ConnContext is the servers' http.Server.ConnContext.
	ConnContext func(context.Context, net.Conn) context.Context
	Log         *slog.Logger
}

// Server is one listener and the HTTP server on it.
type Server struct {
	HTTP     *http.Server
	Listener net.Listener
	TLS      bool
	Desc     string // its URL, for the log
}

// Serve serves until the server is shut down.
func (s Server) Serve() error {
	if s.TLS {
		return s.HTTP.ServeTLS(s.Listener, "", "")
	}
	return s.HTTP.Serve(s.Listener)
}

// newServer is the HTTP server for h: requests with bodies refused, the
// timeouts, and the connection limits told of each connection's state.
func (c *Config) newServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           refuseBodies(h),
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadHeaderTimeout + 5*time.Second, // no request has a body to wait for
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		// Its lines (TLS handshakes failing, bad requests) are anyone's to
		// cause: the throttle of the command's logger keys them by their
		// text.
		ErrorLog:  slog.NewLogLogger(c.Log.Handler(), slog.LevelWarn),
		ConnState: netlimit.ConnState,
		// A body of pieces finds its connection there, to send the
		// header in its writev.
		ConnContext: c.ConnContext,
	}
}

// Listen opens the listeners c names, in the order plain, TLS, admin;
// on an error it closes those it opened.
func Listen(c Config) (out []Server, err error) {
	defer func() {
		if err != nil {
			for _, s := range out {
				s.Listener.Close()
				s.HTTP.Shutdown(context.Background()) // stops the TLS pair's reloader
			}
		}
	}()
	if c.Plain.Addr != "" {
		ln, err := net.Listen("tcp", c.Plain.Addr)
		if err != nil {
			return out, fmt.Errorf("%s: %w", c.Plain.Setting, err)
		}
		out = append(out, Server{HTTP: c.newServer(c.Handler), Listener: c.Conns.Listener(ln), Desc: "http://" + ln.Addr().String()})
	}
	if c.TLS.Addr != "" {
		s, err := c.listenTLS()
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	if c.Admin.Addr != "" && c.AdminHandler != nil {
		ln, err := net.Listen("tcp", c.Admin.Addr)
		if err != nil {
			return out, fmt.Errorf("%s: %w", c.Admin.Setting, err)
		}
		out = append(out, Server{HTTP: c.newServer(c.AdminHandler), Listener: ln, Desc: "http://" + ln.Addr().String() + c.AdminDesc})
	}
	return out, nil
}

// listenTLS opens the TLS listener, serving the newest certificate on disk
// and HTTP/1.1 only unless HTTP2.
func (c *Config) listenTLS() (Server, error) {
	cr, err := reload.NewCertPair(c.Cert, c.Key, c.CertReport)
	if err != nil {
		return Server{}, err
	}
	if c.CertReport != nil {
		c.CertReport(nil) // TLS is on, its pair loaded
	}
	ln, err := net.Listen("tcp", c.TLS.Addr)
	if err != nil {
		return Server{}, fmt.Errorf("%s: %w", c.TLS.Setting, err)
	}
	s := c.newServer(c.Handler)
	ctx, stop := context.WithCancel(context.Background())
	s.RegisterOnShutdown(stop)
	go cr.Run(ctx, c.CertRecheck)
	s.TLSConfig = c.TLSConfig.Clone()
	s.TLSConfig.GetCertificate = cr.GetCertificate
	if c.HTTP2 {
		s.TLSConfig.NextProtos = []string{"h2", "http/1.1"}
	} else {
		// A non-nil, empty map turns HTTP/2 off.
		s.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		s.TLSConfig.NextProtos = []string{"http/1.1"}
	}
	return Server{HTTP: s, Listener: c.Conns.Listener(ln), TLS: true, Desc: "https://" + ln.Addr().String()}, nil
}

package admit

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/ignition-mcs/mcs/netlimit"
)

// TLSConfig is how ServeTLS serves.
type TLSConfig struct {
	CertFile, KeyFile string
	Logger            *slog.Logger
	// OnReload, if not nil, is called (on its own goroutine) with each
	// certificate pair loaded after the first.
	OnReload func(tls.Certificate)
	// Conns, if not nil, counts and bounds the connections (overall and
	// per client address); MaxStreams bounds the HTTP/2 streams of one
	// (0: net/http's 250). Both only bound what waits: Config.MaxReviews
	// bounds the reviews under way.
	Conns      *netlimit.Table
	MaxStreams int
	// ClientCAFile, if set, is the CA bundle (PEM) of the client
	// certificate the API server presents (its admission configuration's
	// kubeconfig for webhooks): MutatePath then answers 403 to a request
	// without a certificate it signed. The probes, /status and /metrics
	// do not ask for one.
	ClientCAFile string
}

// ServeTLS serves h over TLS on ln until ctx ends, then shuts down,
// letting answers under way finish for a few seconds. The certificate
// pair is read at start (an error if it cannot be) and again whenever its
// files change (controller-runtime's certwatcher: file events, and a poll
// every 10 s), so a renewed serving certificate is used without a restart.
func ServeTLS(ctx context.Context, ln net.Listener, h http.Handler, c TLSConfig) error {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	cw, err := certwatcher.New(c.CertFile, c.KeyFile)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	cw.RegisterCallback(func(cert tls.Certificate) {
		c.Logger.Info("serving certificate reloaded", "cert", c.CertFile)
		if c.OnReload != nil {
			c.OnReload(cert)
		}
	})
	tc := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cw.GetCertificate, NextProtos: []string{"h2", "http/1.1"}}
	if c.ClientCAFile != "" {
		if tc.ClientCAs, err = clientCAs(c.ClientCAFile); err != nil {
			return err
		}
		tc.ClientAuth = tls.VerifyClientCertIfGiven
		h = verifiedReviews(h)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchErr := make(chan error, 1)
	go func() { watchErr <- cw.Start(ctx) }()
	srv := &http.Server{
		Handler:           h,
		TLSConfig:         tc,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       90 * time.Second,
		// A request's header is a few hundred bytes; net/http's default
		// lets each connection hold 1 MiB of one.
		MaxHeaderBytes: 64 << 10,
		HTTP2:          &http.HTTP2Config{MaxConcurrentStreams: c.MaxStreams},
		ErrorLog:       slog.NewLogLogger(c.Logger.Handler(), slog.LevelDebug),
	}
	if c.Conns != nil {
		ln = c.Conns.Listener(ln)
		srv.ConnState = netlimit.ConnState
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-served:
		return err
	case err := <-watchErr:
		_ = srv.Close()
		if err != nil {
			return fmt.Errorf("watching the serving certificate: %w", err)
		}
		return nil
	case <-ctx.Done():
	}
	shutdown, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer stop()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// clientCAs reads a CA bundle.
func clientCAs(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("client CA %s: no PEM certificate in it", file)
	}
	return pool, nil
}

// verifiedReviews answers 403 to a review whose client presented no
// certificate the client CA signed (the handshake verified any that was
// presented): only the API server may have its reviews answered.
func verifiedReviews(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == MutatePath && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			rw.Header().Set("Connection", "close")
			http.Error(rw, "forbidden: reviews need a client certificate of the client CA", http.StatusForbidden)
			return
		}
		next.ServeHTTP(rw, r)
	})
}

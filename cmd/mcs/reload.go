package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/ignition-mcs/mcs/serve"
)

// fileCache re-reads a file when its size or modification time changes,
// keeping the last good value when the new contents do not parse.
type fileCache struct {
	path  string
	parse func([]byte) (any, error)

	mu      sync.Mutex
	checked time.Time
	stamp   string
	val     any
	err     error // of the newest attempt
}

// minRecheck bounds how often a hot path stats the file.
const minRecheck = time.Second

// get returns the newest value that parsed and, until the file parses
// again, the error of the newest attempt: between rechecks too, so a
// caller does not take a cached value for a recovery.
func (c *fileCache) get() (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.val != nil && time.Since(c.checked) < minRecheck {
		return c.val, c.err
	}
	c.checked = time.Now()
	v, err := c.load()
	c.err = err
	return v, err
}

// load re-reads the file if it changed; under c.mu.
func (c *fileCache) load() (any, error) {
	info, err := os.Stat(c.path)
	if err != nil {
		return c.val, err
	}
	stamp := fmt.Sprint(info.Size(), info.ModTime().UnixNano())
	if stamp == c.stamp && c.val != nil {
		return c.val, nil
	}
	b, err := os.ReadFile(c.path)
	if err != nil {
		return c.val, err
	}
	v, err := c.parse(b)
	if err != nil {
		return c.val, fmt.Errorf("%s: %w", c.path, err)
	}
	c.stamp, c.val = stamp, v
	return v, nil
}

// certReloader serves the newest valid certificate pair: rotating the files
// on disk takes effect on the next handshake, without a restart. A pair
// that does not load keeps the previous one serving, and report is told
// each change of outcome (the error, or nil once a pair loads again), so a
// failed rotation is not silent until the old certificate expires.
type certReloader struct {
	cert, key string
	report    func(error) // nil: nobody is told
	once      sync.Once
	cache     *fileCache

	mu   sync.Mutex
	last string // the error last reported; "" while the pair loads
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.once.Do(func() {
		r.cache = &fileCache{path: r.cert, parse: func([]byte) (any, error) {
			c, err := tls.LoadX509KeyPair(r.cert, r.key)
			if err != nil {
				return nil, err
			}
			return &c, nil
		}}
	})
	v, err := r.cache.get()
	if v == nil {
		return nil, fmt.Errorf("TLS certificate %s and key %s (--cert, --key): %w", r.cert, r.key, err)
	}
	r.observe(err)
	return v.(*tls.Certificate), nil
}

// observe reports err when it differs from the last outcome reported.
func (r *certReloader) observe(err error) {
	msg := ""
	if err != nil {
		msg = fmt.Sprintf("certificate %s and key %s: %v", r.cert, r.key, err)
	}
	r.mu.Lock()
	changed := msg != r.last
	r.last = msg
	r.mu.Unlock()
	if changed && r.report != nil {
		if err != nil {
			err = errors.New(msg)
		}
		r.report(err)
	}
}

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

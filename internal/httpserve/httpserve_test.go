package httpserve

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/internal/testpki"
	"github.com/ignition-mcs/mcs/netlimit"
)

func config(t *testing.T) Config {
	log := slog.New(slog.DiscardHandler)
	return Config{
		Handler:      http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "node "+r.Proto) }),
		AdminHandler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "admin") }),
		AdminDesc:    " (admin)", CertRecheck: time.Hour, TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second,
		Conns: netlimit.NewTable(netlimit.Limits{}, nil, log, nil), Log: log,
	}
}

// serve serves every server until the test ends.
func serve(t *testing.T, servers []Server) {
	for _, s := range servers {
		go s.Serve()
		t.Cleanup(func() { s.HTTP.Close() })
	}
}

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// Each listener serves its handler: the node ports the server, the admin
// port the admin handler; TLS speaks HTTP/1.1 unless HTTP2.
func TestListen(t *testing.T) {
	ca := testpki.NewCA(t)
	pair := ca.Serving(t)
	cert, key := pair.Files(t, t.TempDir())
	pool := ca.Pool()
	for _, tc := range []struct {
		name  string
		http2 bool
		proto string
	}{{"http/1.1", false, "HTTP/1.1"}, {"h2", true, "HTTP/2.0"}} {
		t.Run(tc.name, func(t *testing.T) {
			c := config(t)
			c.Plain, c.TLS, c.Admin = Addr{Addr: "127.0.0.1:0"}, Addr{Addr: "127.0.0.1:0"}, Addr{Addr: "127.0.0.1:0"}
			c.Cert, c.Key, c.HTTP2 = cert, key, tc.http2
			var reports []error
			c.CertReport = func(err error) { reports = append(reports, err) }
			servers, err := Listen(c)
			if err != nil {
				t.Fatal(err)
			}
			serve(t, servers)
			if len(servers) != 3 || servers[0].TLS || !servers[1].TLS || !strings.HasSuffix(servers[2].Desc, " (admin)") {
				t.Fatalf("servers %+v", servers)
			}
			if len(reports) != 1 || reports[0] != nil {
				t.Errorf("certificate reports %v, want one nil", reports)
			}
			plain := &http.Client{Timeout: 10 * time.Second}
			if got := get(t, plain, servers[0].Desc); got != "node HTTP/1.1" {
				t.Errorf("plain: %q", got)
			}
			if got := get(t, plain, "http://"+servers[2].Listener.Addr().String()); got != "admin" {
				t.Errorf("admin: %q", got)
			}
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
			defer tr.CloseIdleConnections()
			if got := get(t, &http.Client{Timeout: 10 * time.Second, Transport: tr}, servers[1].Desc); got != "node "+tc.proto {
				t.Errorf("TLS: %q, want %s", got, tc.proto)
			}
		})
	}
}

// An address that does not listen is named by its setting, and the
// listeners already open are closed.
func TestListenFailsNamingTheSetting(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	c := config(t)
	c.Plain = Addr{Addr: "127.0.0.1:0", Setting: "--listen-plain"}
	c.Admin = Addr{Addr: taken.Addr().String(), Setting: "--listen-admin"}
	servers, err := Listen(c)
	if err == nil || !strings.HasPrefix(err.Error(), "--listen-admin: ") {
		t.Fatalf("error %v", err)
	}
	if len(servers) != 1 {
		t.Fatalf("%d servers", len(servers))
	}
	if conn, err := net.DialTimeout("tcp", servers[0].Listener.Addr().String(), 10*time.Second); err == nil {
		conn.Close()
		t.Error("the plain listener is still open")
	}
	c = config(t)
	c.TLS, c.Cert, c.Key = Addr{Addr: "127.0.0.1:0"}, filepath.Join(t.TempDir(), "none.crt"), "none.key"
	if _, err := Listen(c); err == nil || !strings.Contains(err.Error(), "none.crt") {
		t.Errorf("a missing certificate: %v", err)
	}
}

// CertReport counts each failure once and holds the gauge while it lasts.
func TestCertReport(t *testing.T) {
	reg := prometheus.NewRegistry()
	var told []error
	report, err := CertReport(slog.New(slog.DiscardHandler), reg, func(err error) { told = append(told, err) })
	if err != nil {
		t.Fatal(err)
	}
	failed := errors.New("no pair")
	for _, step := range []struct {
		err             error
		failing, errors float64
	}{{failed, 1, 1}, {nil, 0, 1}, {failed, 1, 2}} {
		report(step.err)
		if f, e := gauge(t, reg, "mcs_tls_certificate_reload_failing"), gauge(t, reg, "mcs_tls_certificate_reload_errors_total"); f != step.failing || e != step.errors {
			t.Errorf("after %v: failing %v, errors %v; want %v, %v", step.err, f, e, step.failing, step.errors)
		}
	}
	if len(told) != 3 || told[1] != nil {
		t.Errorf("told %v", told)
	}
	if _, err := CertReport(slog.New(slog.DiscardHandler), reg, nil); err == nil {
		t.Error("registered twice on one registry")
	}
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	v, ok := testkit.Metric(t, reg, name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	return v
}

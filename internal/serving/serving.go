// Package serving runs mcs's server commands (mcs, mcs start, mcs bootstrap) from a Config: source, skew gate, tokens, the reloader that renders, the server, its listeners and their lifecycle.
package serving

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/httpserve"
	"github.com/ignition-mcs/mcs/netlimit"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/source"
	"github.com/ignition-mcs/mcs/source/kube"
)

// Config is what a server command serves, and how. Its errors and log
// lines name the settings by the flags of mcs that set them.
type Config struct {
	ListenTLS, ListenPlain string
	ListenAdmin            string
	// AdminOnly keeps /status and /metrics off the node listeners, on
	// ListenAdmin only, as mcs start does (--admin-only).
	AdminOnly bool
	// TLSAsked is set when the TLS listener was asked for by name
	// (--listen-tls, --secure-port or MCS_LISTEN_TLS): without a
	// certificate that is an error, not a warning.
	TLSAsked         bool
	Cert, Key        string
	TLS              *tls.Config // versions and suites
	HTTP2            bool
	Dir              string
	Source           string // dir or kube
	RenderMode       string
	ControllerConfig string
	// REST is the API server's config (with --source kube, tokens from
	// Secrets, insights); its errors name the kubeconfig.
	REST                    func() (*rest.Config, error)
	KubeQPS                 float64
	KubeBurst               int
	KubeBacklogList         int
	AuthTokenFile           string
	PoolTokenSecrets        bool
	SkewPolicy              string
	DefaultSpec             convert.Version
	Render                  render.Options // --min-spec, --max-spec, --spec
	Runbooks                string         // the base of the health insights' references; "": insight.DefaultRunbooks
	SpecGiven, MaxSpecGiven bool           // --spec, --max-spec given
	Poll, Debounce          time.Duration
	ShutdownDelay           time.Duration
	ShutdownGrace           time.Duration
	ReadHeaderTimeout       time.Duration
	WriteTimeout            time.Duration
	IdleTimeout             time.Duration
	MaxFileSize             int64 // bytes
	MaxTreeSize             int64 // bytes
	ReloadTimeout           time.Duration
	MaxInFlight             int
	MaxConns, MaxPerClient  int
	WriteStall              time.Duration
	MinWriteRate            int64 // bytes a second
	// NodeFiles reads the files served to nodes beside their config, at
	// every render (mcs start builds its kubeconfig from Start instead).
	NodeFiles func() (render.NodeFiles, error)

	// Start and Bootstrap are set by mcs start and mcs bootstrap.
	Start     *Start
	Bootstrap *Bootstrap
}

// Start is what mcs start serves from beside the cluster: OpenShift's
// machine-config-server start's flags.
type Start struct {
	APIServerURL   string
	PayloadVersion string
	TokenDir       string
}

// Bootstrap is what mcs bootstrap serves from: the installer's manifests.
type Bootstrap struct {
	BaseDir string
	// Certs are registry CAs as REGISTRY=FILE, FILE relative to BaseDir,
	// served as /etc/docker/certs.d/REGISTRY/ca.crt.
	Certs []string
}

// nodeFiles reads, at every render, the node files of files and the
// registry CAs.
func (b *Bootstrap) nodeFiles(files func() (render.NodeFiles, error)) func() (render.NodeFiles, error) {
	return func() (render.NodeFiles, error) {
		nf, err := files()
		if err != nil {
			return nf, err
		}
		for _, c := range b.Certs {
			registry, file, _ := strings.Cut(c, "=")
			pem, err := os.ReadFile(filepath.Join(b.BaseDir, file))
			if err != nil {
				return nf, fmt.Errorf("--bootstrap-certs %s: %w", c, err)
			}
			nf.RegistryCAs = append(nf.RegistryCAs, render.RegistryCA{Registry: registry, PEM: pem})
		}
		return nf, nil
	}
}

// Run serves as c says until ctx ends (see run), saying on stdout where
// it listens.
func Run(ctx context.Context, c *Config, log *slog.Logger, reg *prometheus.Registry, stdout io.Writer) error {
	// What starts on ctx (token watch, insights, events) ends with Run, also
	// when a later step fails.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ro, ceiling := c.maxSpec(ctx, log)
	gate, reloadPolicy, err := c.newGate(log)
	if err != nil {
		return err
	}
	tokens, err := c.newTokens(ctx, log)
	if err != nil {
		return err
	}
	src, err := c.newSource(ro, log, reg)
	if err != nil {
		return err
	}
	notify, err := clusterNotifier(ctx, src)
	if err != nil {
		return err
	}
	files := c.NodeFiles
	if ks, ok := src.(*kube.Source); ok && c.Start != nil {
		files = c.Start.nodeFiles(ks)
	}
	if c.Bootstrap != nil {
		files = c.Bootstrap.nodeFiles(files)
	}
	cfg := serve.Config{Logger: log, Registry: reg, DefaultSpec: c.DefaultSpec, Tokens: tokens, Gate: gate, Source: src.String(), MaxSpec: ceiling, Notify: notify, MaxInFlight: c.MaxInFlight, ServingCert: c.servingCert()}
	if l, ok := src.(source.Lagging); ok {
		cfg.Backlog = l.Backlog
	}
	srv, err := serve.New(cfg)
	if err != nil {
		return err
	}
	if err := c.startInsights(ctx, src, srv, log); err != nil {
		return err
	}
	rl := &pipeline.Reloader{Source: c.startSource(src, log), Server: srv, Gate: gate, Debounce: c.Debounce, Timeout: c.ReloadTimeout, Logger: log, NodeFiles: files}
	cm, err := netlimit.NewMetrics(reg)
	if err != nil {
		return err
	}
	report, err := httpserve.CertReport(log, reg, srv.CertificateReload)
	if err != nil {
		return err
	}
	ls := Listeners{Conns: netlimit.NewTable(c.connLimits(log), nil, log, cm), CertReport: report, Admin: srv.AdminHandler()}
	if c.Start != nil || c.AdminOnly { // as OpenShift's server: /config/ and the probes only
		ls.Nodes = srv.NodeHandler()
	}
	// Registered before anything runs: SIGHUP's default action ends the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return c.run(ctx, srv, rl, ls, hup, reloadPolicy, log, stdout)
}

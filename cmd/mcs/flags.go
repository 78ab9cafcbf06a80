package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/insight"
	"github.com/ignition-mcs/mcs/internal/serving"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/source/kube"
	"github.com/ignition-mcs/mcs/source/tree"
)

// options are the server commands' flags: what they set of the
// serving.Config, and what cmd/mcs reads itself.
type options struct {
	serving.Config
	kubeAPIConfig         string // the kubeconfig mcs reads the cluster with
	kubeconfig, kubeletCA string
	log                   logOptions
	tls                   tlsOptions

	// start and bootstrap are set by mcs start and mcs bootstrap:
	// OpenShift's command lines.
	start     *startOptions
	bootstrap *bootstrapOptions

	// set names the flags given, on the command line or as MCS_<FLAG>.
	set map[string]bool
	// refused are the flags mcs start or mcs bootstrap shares with mcs
	// but refuses: left out of its --help.
	refused []string
}

// parseFlags reads the flags, then MCS_<FLAG> for those not given; it
// returns nil options, and no error, for --help.
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	return o.parse("mcs", "Usage: mcs (--dir DIR | --source kube) [flags]\n       mcs COMMAND [flags]   (see 'mcs COMMAND --help')\n\n"+
		"Serves /config/<pool> to booting nodes, /healthz, /readyz, /metrics and /status.\n"+
		"Every flag can also be set as MCS_<FLAG> (e.g. MCS_LISTEN_PLAIN=127.0.0.1:22624).\n\nCommands:\n"+commandList(),
		args, stderr, nil, o.check)
}

// parse reads the server's command line as the command name (mcs, mcs
// start, mcs bootstrap) into o: the flags define defines, then those more
// defines (a subcommand's own, and OpenShift's defaults where they differ),
// then MCS_<FLAG> for those not given, then check. It returns nil options,
// and no error, for --help.
func (o *options) parse(name, usage string, args []string, stderr io.Writer, more func(*flag.FlagSet), check func() error) (*options, error) {
	fs := cmdline.NewFlagSet(name, usage, stderr)
	o.define(fs)
	if more != nil {
		more(fs)
	}
	if len(o.refused) > 0 {
		cmdline.Hide(fs, usage, o.refused...)
	}
	if err := cmdline.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil
		}
		return nil, err
	}
	o.set = cmdline.Given(fs)
	if err := check(); err != nil {
		return nil, cmdline.Mistake(fs, err)
	}
	return o, nil
}

// sizeFlag parses a byte count, with Kubernetes' suffixes (Ki, Mi, Gi).
func sizeFlag(dst *int64) func(string) error {
	return func(s string) error {
		q, err := resource.ParseQuantity(s)
		if err != nil || q.Sign() <= 0 {
			return errors.New("not a size: want a positive number of bytes, or one with a Ki, Mi or Gi suffix such as 16Mi")
		}
		*dst = q.Value()
		return nil
	}
}

func portAlias(dst *string, s string) error {
	if _, err := strconv.ParseUint(s, 10, 16); err != nil {
		return errors.New("not a port: want a number from 0 to 65535")
	}
	*dst = ":" + s
	return nil
}

// logOptions are --log-format and --log-level, which the server and the
// controller share.
type logOptions struct{ format, level string }

func (l *logOptions) define(fs *flag.FlagSet) {
	cmdline.Choice(fs, &l.format, "log-format", "text", "log format", "text", "json")
	cmdline.Choice(fs, &l.level, "log-level", "info", "log level", "debug", "info", "warn", "error")
}

// define defines every flag on fs, writing into o.
func (o *options) define(fs *flag.FlagSet) {
	fs.StringVar(&o.ListenTLS, "listen-tls", ":22623", "TLS listen address (needs --cert and --key; empty disables)")
	fs.StringVar(&o.ListenPlain, "listen-plain", ":22624", "plain HTTP listen address (empty disables)")
	fs.Func("secure-port", "alias of --listen-tls :PORT (upstream's flag)", func(s string) error { return portAlias(&o.ListenTLS, s) })
	fs.Func("insecure-port", "alias of --listen-plain :PORT (upstream's flag)", func(s string) error { return portAlias(&o.ListenPlain, s) })
	fs.StringVar(&o.Cert, "cert", "", "TLS certificate file (PEM), reloaded when it changes")
	fs.StringVar(&o.Key, "key", "", "TLS key file (PEM), reloaded when it changes")
	cmdline.Choice(fs, &o.Source, "source", "dir", "where MachineConfigs and pools come from: dir (--dir) or kube (the Kubernetes API server)", "dir", "kube")
	fs.StringVar(&o.Dir, "dir", "", "directory of MachineConfigs, pools, Butane files and a ControllerConfig (with --source dir)")
	fs.StringVar(&o.kubeAPIConfig, "kubeconfig", "", "kubeconfig for --source kube (default: in-cluster, then $KUBECONFIG or ~/.kube/config)")
	cmdline.Choice(fs, &o.RenderMode, "render-mode", string(kube.ModeSelf), "with --source kube: self (render each pool here) or pool (serve the rendered config the pool names, as OpenShift's server does)", string(kube.ModeSelf), string(kube.ModePool))
	fs.StringVar(&o.ControllerConfig, "controller-config", kube.DefaultControllerConfig, "with --source kube: the ControllerConfig to read")
	fs.Float64Var(&o.KubeQPS, "kube-api-qps", 100, "with --source kube: requests per second to the API server, sustained (client-go's default, 5, lets a steady stream of MachineConfig changes leave the source behind)")
	fs.IntVar(&o.KubeBurst, "kube-api-burst", 300, "with --source kube: requests to the API server in a burst")
	fs.IntVar(&o.KubeBacklogList, "kube-backlog-list", kube.DefaultBacklogList, "with --source kube: changed MachineConfigs waiting to be read that make the source read them all with one LIST rather than a GET each (see /status backlog)")
	fs.StringVar(&o.kubeconfig, "bootstrap-kubeconfig", "", "node bootstrap kubeconfig served as /etc/kubernetes/kubeconfig")
	fs.StringVar(&o.kubeletCA, "kubelet-ca", "", "CA bundle served as /etc/kubernetes/kubelet-ca.crt (default: the ControllerConfig's)")
	fs.StringVar(&o.AuthTokenFile, "auth-token-file", "", "file of bearer tokens, one per line, each followed by the pools it may fetch (none: every pool, and /status and /metrics); /config/, /status and /metrics then require one")
	fs.StringVar(&o.ListenAdmin, "listen-admin", "", "also serve /status, /metrics and the probes here without a token, e.g. 127.0.0.1:22626 (with tokens on, the other listeners need an all-pools token for them)")
	fs.BoolVar(&o.AdminOnly, "admin-only", false, "serve /status and /metrics on --listen-admin only: the other listeners answer /config/, the probes and /v1/node-failure, as mcs start's do")
	fs.BoolVar(&o.PoolTokenSecrets, "pool-token-secrets", false, "also accept the pool token Secrets of mcs controller --manage-pki --pool-token-rotation, each for its pool (read with --kubeconfig; docs/pki.md)")
	fs.StringVar(&o.SkewPolicy, "skew-policy", "", "boot-image skew policy file (YAML or JSON); reloaded on SIGHUP")
	fs.StringVar(&o.Runbooks, "runbook-base", insight.DefaultRunbooks, "with --source kube: the `URL` of docs/alerts.md the health insights' references point into (#<alert> appended); your copy's, where you keep this repository (docs/alerts.md#where-the-runbooks-are)")
	o.log.define(fs)
	fs.Var(cmdline.Version(&o.DefaultSpec), "default-spec", "spec `VERSION` for clients whose Accept names no Ignition type (default: the rendered spec; 2.2.0 is upstream's)")
	cmdline.SpecFlags(fs, &o.Render, "lowest spec `VERSION` to render at", "highest spec `VERSION` to render at: the newest spec release N-1 reads; reading a cluster without it, the newest the release a rollback returns to reads (its ClusterVersion history), "+convert.Newest.String()+" without one", "render at exactly this spec `VERSION`")
	o.tls.define(fs.Func)
	fs.BoolVar(&o.HTTP2, "http2", false, "allow HTTP/2 on TLS (off by default: Ignition speaks HTTP/1.1)")
	fs.DurationVar(&o.Poll, "poll", time.Second, "how often --dir is checked for changes")
	fs.DurationVar(&o.Debounce, "debounce", 200*time.Millisecond, "quiet time after a change before re-rendering")
	o.MaxFileSize, o.MaxTreeSize = tree.DefaultMaxFileSize, tree.DefaultMaxTreeSize
	fs.Func("max-file-size", "largest file read from --dir, in bytes or with a Ki/Mi/Gi suffix (default 16Mi); whatever it is, a pool's rendered MachineConfig may be at most 1.5 MiB, OpenShift's limit", sizeFlag(&o.MaxFileSize))
	fs.Func("max-tree-size", "most bytes read from all files of --dir together (default 256Mi)", sizeFlag(&o.MaxTreeSize))
	fs.DurationVar(&o.ReloadTimeout, "reload-timeout", pipeline.DefaultReloadTimeout, "time a load and render may take before /status, mcs_reload_stuck and a WARN log report it stuck")
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay", 0, "on SIGTERM, time /readyz answers 503 while everything else is served, before the listeners close: a Deployment's readiness probe period times its failure threshold, so no node is sent to a closed port")
	fs.DurationVar(&o.ShutdownGrace, "shutdown-grace", 20*time.Second, "time in-flight requests get to finish on SIGTERM, after --shutdown-delay")
	// Nodes send a few small headers and read one body; anything slower is a
	// broken or hostile client holding a connection.
	fs.DurationVar(&o.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "time a client gets to send its request headers")
	fs.DurationVar(&o.WriteTimeout, "write-timeout", 60*time.Second, "time a whole response may take to write")
	fs.DurationVar(&o.WriteStall, "write-stall-timeout", 5*time.Second, "how far a response may fall behind --min-write-rate: one of n bytes must be written within this plus n over the rate, so a client that stops or reads slowly is cut off in seconds (0: only --write-timeout)")
	o.MinWriteRate = 64 << 10
	fs.Func("min-write-rate", "bytes a second a client must read a response at, after --write-stall-timeout, with a Ki/Mi suffix (default 64Ki; a booting node reads megabytes a second)", sizeFlag(&o.MinWriteRate))
	fs.IntVar(&o.MaxConns, "max-connections", 4096, "client connections open at once, both listeners together (lowered to fit the open-file limit); past it an idle one is closed, else the new one (0: no bound)")
	fs.IntVar(&o.MaxPerClient, "max-connections-per-client", 256, "client connections open at once from one address, so that no client takes every slot; raise it behind a proxy that hides node addresses (0: no bound)")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", 90*time.Second, "time an idle keep-alive connection is kept")
	fs.IntVar(&o.MaxInFlight, "max-in-flight", 1024, "config requests answered at once; past it 503, which Ignition retries (0: no bound)")
}

// check refuses options that contradict each other.
func (o *options) check() error {
	switch o.Source {
	case "dir":
		if o.Dir == "" {
			return errors.New("--dir is required (or --source kube)")
		}
	case "kube":
		if o.Dir != "" {
			return errors.New("--dir is for --source dir; --source kube reads the API server")
		}
		if _, err := kube.ParseMode(o.RenderMode); err != nil {
			return fmt.Errorf("--render-mode: %w", err)
		}
		if o.KubeQPS <= 0 || o.KubeBurst <= 0 || o.KubeBacklogList <= 0 {
			return fmt.Errorf("--kube-api-qps, --kube-api-burst and --kube-backlog-list: want positive numbers (got %v, %d and %d)", o.KubeQPS, o.KubeBurst, o.KubeBacklogList)
		}
	default:
		return fmt.Errorf("--source %q: want dir or kube", o.Source)
	}
	if (o.Cert == "") != (o.Key == "") {
		return errors.New("--cert and --key go together")
	}
	if u, err := url.Parse(o.Runbooks); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
		return fmt.Errorf("--runbook-base %q: want an http(s) URL of docs/alerts.md, without a #fragment (each alert's is added)", o.Runbooks)
	}
	// Named as typed: --secure-port is OpenShift's name for --listen-tls.
	for _, f := range []string{"secure-port", "listen-tls"} {
		if o.set[f] && o.ListenTLS != "" && o.Cert == "" {
			return fmt.Errorf("--%s needs --cert and --key", f)
		}
	}
	return nil
}

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
	"github.com/ignition-mcs/mcs/source/kube"
)

var errUsage = errors.New("usage")

func exitCode(err error) int {
	if err == errUsage {
		return 2
	}
	return 1
}

type options struct {
	listenTLS, listenPlain string
	cert, key              string
	dir                    string
	source                 string // dir or kube
	kubeAPIConfig          string // the kubeconfig mcs reads the cluster with
	renderMode             string
	controllerConfig       string
	kubeconfig, kubeletCA  string
	authTokenFile          string
	skewPolicy             string
	logFormat, logLevel    string
	defaultSpec            string
	minSpec, maxSpec, spec string
	http2                  bool
	poll, debounce         time.Duration
	shutdownGrace          time.Duration
	readHeaderTimeout      time.Duration
	writeTimeout           time.Duration
	idleTimeout            time.Duration
	maxFileSize            int64 // bytes
	maxTreeSize            int64 // bytes
	reloadTimeout          time.Duration
	maxInFlight            int
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("mcs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listenTLS, "listen-tls", ":22623", "TLS listen address (needs --cert and --key; empty disables)")
	fs.StringVar(&o.listenPlain, "listen-plain", ":22624", "plain HTTP listen address (empty disables)")
	fs.Func("secure-port", "alias of --listen-tls :PORT (upstream's flag)", func(s string) error { return portAlias(&o.listenTLS, s) })
	fs.Func("insecure-port", "alias of --listen-plain :PORT (upstream's flag)", func(s string) error { return portAlias(&o.listenPlain, s) })
	fs.StringVar(&o.cert, "cert", "", "TLS certificate file (PEM), reloaded when it changes")
	fs.StringVar(&o.key, "key", "", "TLS key file (PEM), reloaded when it changes")
	fs.StringVar(&o.source, "source", "dir", "where MachineConfigs and pools come from: dir (--dir) or kube (the Kubernetes API server)")
	fs.StringVar(&o.dir, "dir", "", "directory of MachineConfigs, pools, Butane files and a ControllerConfig (with --source dir)")
	fs.StringVar(&o.kubeAPIConfig, "kubeconfig", "", "kubeconfig for --source kube (default: in-cluster, then $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&o.renderMode, "render-mode", string(kube.ModeSelf), "with --source kube: self (render each pool here) or pool (serve the rendered config the pool names, as OpenShift's server does)")
	fs.StringVar(&o.controllerConfig, "controller-config", kube.DefaultControllerConfig, "with --source kube: the ControllerConfig to read")
	fs.StringVar(&o.kubeconfig, "bootstrap-kubeconfig", "", "node bootstrap kubeconfig served as /etc/kubernetes/kubeconfig")
	fs.StringVar(&o.kubeletCA, "kubelet-ca", "", "CA bundle served as /etc/kubernetes/kubelet-ca.crt (default: the ControllerConfig's)")
	fs.StringVar(&o.authTokenFile, "auth-token-file", "", "file of bearer tokens, one per line; /config/ then requires one")
	fs.StringVar(&o.skewPolicy, "skew-policy", "", "boot-image skew policy file (YAML or JSON); reloaded on SIGHUP")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&o.defaultSpec, "default-spec", "", "spec for clients whose Accept names no Ignition type (default: the rendered spec; 2.2.0 is upstream's)")
	fs.StringVar(&o.minSpec, "min-spec", "3.0.0", "lowest spec to render at")
	fs.StringVar(&o.maxSpec, "max-spec", "", "highest spec to render at: the newest spec release N-1 reads (default: the newest)")
	fs.StringVar(&o.spec, "spec", "", "render at exactly this spec")
	fs.BoolVar(&o.http2, "http2", false, "allow HTTP/2 on TLS (off by default: Ignition speaks HTTP/1.1)")
	fs.DurationVar(&o.poll, "poll", time.Second, "how often --dir is checked for changes")
	fs.DurationVar(&o.debounce, "debounce", 200*time.Millisecond, "quiet time after a change before re-rendering")
	o.maxFileSize, o.maxTreeSize = render.DefaultMaxFileSize, render.DefaultMaxTreeSize
	fs.Func("max-file-size", "largest file read from --dir, in bytes or with a Ki/Mi/Gi suffix (default 16Mi)", sizeFlag(&o.maxFileSize))
	fs.Func("max-tree-size", "most bytes read from all files of --dir together (default 256Mi)", sizeFlag(&o.maxTreeSize))
	fs.DurationVar(&o.reloadTimeout, "reload-timeout", serve.DefaultReloadTimeout, "time a load and render may take before /status, mcs_reload_stuck and a WARN log report it stuck")
	fs.DurationVar(&o.shutdownGrace, "shutdown-grace", 20*time.Second, "time in-flight requests get to finish on SIGTERM")
	// Nodes send a few small headers and read one body; anything slower is a
	// broken or hostile client holding a connection.
	fs.DurationVar(&o.readHeaderTimeout, "read-header-timeout", 10*time.Second, "time a client gets to send its request headers")
	fs.DurationVar(&o.writeTimeout, "write-timeout", 60*time.Second, "time a response may take to write")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 90*time.Second, "time an idle keep-alive connection is kept")
	fs.IntVar(&o.maxInFlight, "max-in-flight", 1024, "config requests answered at once; past it 503, which Ignition retries (0: no bound)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: mcs (--dir DIR | --source kube) [flags]\n\nServes /config/<pool> to booting nodes, /healthz, /readyz, /metrics and /status.\nEvery flag can also be set as MCS_<FLAG> (e.g. MCS_LISTEN_PLAIN=127.0.0.1:22624).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil
		}
		return nil, errUsage
	}
	if err := fromEnv(fs); err != nil {
		fmt.Fprintln(stderr, "mcs:", err)
		return nil, errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcs: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return nil, errUsage
	}
	switch o.source {
	case "dir":
		if o.dir == "" {
			fmt.Fprintln(stderr, "mcs: --dir is required (or --source kube)")
			return nil, errUsage
		}
	case "kube":
		if o.dir != "" {
			fmt.Fprintln(stderr, "mcs: --dir is for --source dir; --source kube reads the API server")
			return nil, errUsage
		}
		if _, err := kube.ParseMode(o.renderMode); err != nil {
			fmt.Fprintln(stderr, "mcs: --render-mode:", err)
			return nil, errUsage
		}
	default:
		fmt.Fprintf(stderr, "mcs: --source %q: want dir or kube\n", o.source)
		return nil, errUsage
	}
	if (o.cert == "") != (o.key == "") {
		fmt.Fprintln(stderr, "mcs: --cert and --key go together")
		return nil, errUsage
	}
	return o, nil
}

// sizeFlag parses a byte count, with Kubernetes' suffixes (Ki, Mi, Gi).
func sizeFlag(dst *int64) func(string) error {
	return func(s string) error {
		q, err := resource.ParseQuantity(s)
		if err != nil || q.Sign() <= 0 {
			return fmt.Errorf("%q is not a positive size such as 16Mi", s)
		}
		*dst = q.Value()
		return nil
	}
}

func portAlias(dst *string, s string) error {
	if _, err := strconv.ParseUint(s, 10, 16); err != nil {
		return fmt.Errorf("%q is not a port", s)
	}
	*dst = ":" + s
	return nil
}

// fromEnv sets every flag not given on the command line from MCS_<NAME>.
func fromEnv(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		env := "MCS_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %w", env, e)
			}
		}
	})
	return err
}

func newLogger(o *options, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	ho := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", o.logFormat)
}

func renderOptions(o *options) (render.Options, error) {
	var ro render.Options
	for _, f := range []struct {
		name, val string
		dst       *convert.Version
	}{{"--min-spec", o.minSpec, &ro.MinSpec}, {"--max-spec", o.maxSpec, &ro.MaxSpec}, {"--spec", o.spec, &ro.Spec}} {
		if f.val == "" {
			continue
		}
		v, err := convert.ParseOutputVersion(f.val)
		if err != nil {
			return ro, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = v
	}
	return ro, nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil || o == nil {
		return err
	}
	log, err := newLogger(o, stderr)
	if err != nil {
		return err
	}
	ro, err := renderOptions(o)
	if err != nil {
		return err
	}
	var defaultSpec convert.Version
	if o.defaultSpec != "" {
		if defaultSpec, err = convert.ParseOutputVersion(o.defaultSpec); err != nil {
			return fmt.Errorf("--default-spec: %w", err)
		}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	var gate *skewgate.Gate
	loadPolicy := func() {}
	if o.skewPolicy != "" {
		p, err := skewgate.LoadPolicy(o.skewPolicy)
		if err != nil {
			return err
		}
		gate = skewgate.New(p, log)
		loadPolicy = func() {
			p, err := skewgate.LoadPolicy(o.skewPolicy)
			if err != nil {
				log.Error("skew policy not reloaded; keeping the previous one", "err", err)
				return
			}
			gate.SetPolicy(p)
			log.Info("skew policy reloaded", "mode", p.Mode)
		}
	} else {
		gate = skewgate.New(nil, log)
	}

	var tokens func() [][]byte
	if o.authTokenFile != "" {
		tf := &fileCache{path: o.authTokenFile, parse: parseTokens}
		if _, err := tf.get(); err != nil {
			return fmt.Errorf("--auth-token-file: %w", err)
		}
		tokens = func() [][]byte {
			v, err := tf.get()
			if err != nil {
				log.Error("reading auth tokens; keeping the previous ones", "err", err)
			}
			t, _ := v.([][]byte)
			return t
		}
	}

	src, err := newSource(o, ro, log, reg)
	if err != nil {
		return err
	}
	notify, err := clusterNotifier(ctx, src)
	if err != nil {
		return err
	}
	srv := serve.New(serve.Config{Logger: log, Registry: reg, DefaultSpec: defaultSpec, Tokens: tokens, Gate: gate, Source: src.String(), Notify: notify, MaxInFlight: o.maxInFlight})
	rl := &serve.Reloader{
		Source:   src,
		Server:   srv,
		Debounce: o.debounce,
		Timeout:  o.reloadTimeout,
		Logger:   log,
		NodeFiles: func() (serve.NodeFiles, error) {
			var nf serve.NodeFiles
			var err error
			if o.kubeconfig != "" {
				if nf.Kubeconfig, err = os.ReadFile(o.kubeconfig); err != nil {
					return nf, fmt.Errorf("--bootstrap-kubeconfig: %w", err)
				}
			}
			if o.kubeletCA != "" {
				if nf.KubeletCA, err = os.ReadFile(o.kubeletCA); err != nil {
					return nf, fmt.Errorf("--kubelet-ca: %w", err)
				}
			}
			return nf, nil
		},
	}

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	trigger := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Info("SIGHUP: reloading")
				loadPolicy()
				select {
				case trigger <- struct{}{}:
				default:
				}
			}
		}
	}()
	go rl.Run(ctx, trigger)

	servers, err := listen(o, srv, log)
	if err != nil {
		return err
	}
	for _, s := range servers {
		fmt.Fprintf(stdout, "mcs: listening on %s\n", s.desc)
	}
	errc := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errc <- s.serve() }()
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			cancel()
			return err
		}
	}
	log.Info("shutting down; letting in-flight requests finish", "grace", o.shutdownGrace)
	sctx, scancel := context.WithTimeout(context.Background(), o.shutdownGrace)
	defer scancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.srv.Shutdown(sctx) }()
	}
	wg.Wait()
	return nil
}

// newSource is the directory, or the API server: there the cluster's
// MachineConfiguration is the skew policy unless a policy file is given.
func newSource(o *options, ro render.Options, log *slog.Logger, reg prometheus.Registerer) (source.Source, error) {
	if o.source != "kube" {
		return &source.Dir{Path: o.dir, Poll: o.poll, Options: ro,
			Limits: render.Limits{MaxFileSize: o.maxFileSize, MaxTreeSize: o.maxTreeSize}}, nil
	}
	rc, err := kube.RESTConfig(o.kubeAPIConfig)
	if err != nil {
		return nil, err
	}
	mode, err := kube.ParseMode(o.renderMode)
	if err != nil {
		return nil, err
	}
	if o.skewPolicy != "" {
		log.Info("skew policy from --skew-policy; the cluster's MachineConfiguration is not read")
	}
	return kube.New(kube.Config{
		REST:             rc,
		Mode:             mode,
		Options:          ro,
		ControllerConfig: o.controllerConfig,
		SkewPolicy:       o.skewPolicy == "",
		Logger:           log,
		Registerer:       reg,
	})
}

type server struct {
	srv   *http.Server
	desc  string
	serve func() error
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

func listen(o *options, h http.Handler, log *slog.Logger) ([]server, error) {
	var out []server
	if o.listenPlain != "" {
		ln, err := net.Listen("tcp", o.listenPlain)
		if err != nil {
			return nil, fmt.Errorf("--listen-plain: %w", err)
		}
		s := newHTTPServer(o, h, log)
		out = append(out, server{srv: s, desc: "http://" + ln.Addr().String(), serve: func() error { return s.Serve(ln) }})
	}
	if o.listenTLS != "" && o.cert != "" {
		cr := &certReloader{cert: o.cert, key: o.key}
		if _, err := cr.get(nil); err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", o.listenTLS)
		if err != nil {
			return nil, fmt.Errorf("--listen-tls: %w", err)
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
		out = append(out, server{srv: s, desc: "https://" + ln.Addr().String(), serve: func() error { return s.ServeTLS(ln, "", "") }})
	} else if o.listenTLS != "" && o.listenTLS != ":22623" {
		return nil, errors.New("--listen-tls needs --cert and --key")
	} else if o.listenTLS != "" {
		log.Warn("TLS listener off: no --cert/--key given")
	}
	if len(out) == 0 {
		return nil, errors.New("no listener: set --listen-plain, or --listen-tls with --cert and --key")
	}
	return out, nil
}

func parseTokens(b []byte) (any, error) {
	var out [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		return nil, errors.New("no tokens in file")
	}
	return out, nil
}

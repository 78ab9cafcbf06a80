package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ignition-mcs/mcs/internal/daemon"
	"github.com/ignition-mcs/mcs/internal/httpserve"
	"github.com/ignition-mcs/mcs/netlimit"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/source"
	"github.com/ignition-mcs/mcs/source/kube"
)

// run is mcs: flags, then serveOptions.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return serving(parseFlags)(ctx, args, stdin, stdout, stderr)
}

// serving is a server command (mcs, mcs start, mcs bootstrap): its command
// line read by parse (nil options: nothing to serve, as for --help), then
// serveOptions.
func serving(parse func(args []string, stderr io.Writer) (*options, error)) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		o, err := parse(args, stderr)
		if err != nil || o == nil {
			return err
		}
		return serveOptions(ctx, o, stdout, stderr)
	}
}

// serveOptions wires source, reloader and server as o asks (mcs or mcs
// start), then runs their lifecycle (see lifecycle).
func serveOptions(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	log, err := o.log.logger(stderr)
	if err != nil {
		return err
	}
	cmd, err := daemon.Start(ctx, daemon.Config{Log: log})
	if err != nil {
		return err
	}
	defer cmd.Close()
	reg := cmd.Registry
	ro, ceiling := maxSpec(ctx, o, o.render, log)
	gate, reloadPolicy, err := newGate(o, log)
	if err != nil {
		return err
	}
	tokens, err := newTokens(ctx, o, log)
	if err != nil {
		return err
	}
	src, err := newSource(o, ro, log, reg)
	if err != nil {
		return err
	}
	notify, err := clusterNotifier(ctx, src)
	if err != nil {
		return err
	}
	files := nodeFiles(o)
	if ks, ok := src.(*kube.Source); ok && o.start != nil {
		files = startNodeFiles(o.start, ks)
	}
	if o.bootstrap != nil {
		files = bootstrapNodeFiles(o)
	}
	cfg := serve.Config{Logger: log, Registry: reg, DefaultSpec: o.defaultSpec, Tokens: tokens, Gate: gate, Source: src.String(), MaxSpec: ceiling, Notify: notify, MaxInFlight: o.maxInFlight, ServingCert: servingCert(o.listenTLS, o.cert, o.key)}
	if l, ok := src.(source.Lagging); ok {
		cfg.Backlog = l.Backlog
	}
	srv, err := serve.New(cfg)
	if err != nil {
		return err
	}
	if err := startInsights(ctx, o.kubeAPIConfig, src, srv, log); err != nil {
		return err
	}
	rl := &serve.Reloader{Source: startSource(o, src, log), Server: srv, Gate: gate, Debounce: o.debounce, Timeout: o.reloadTimeout, Logger: log, NodeFiles: files}
	cm, err := netlimit.NewMetrics(reg)
	if err != nil {
		return err
	}
	report, err := httpserve.CertReport(log, reg, srv.CertificateReload)
	if err != nil {
		return err
	}
	ls := listenDeps{conns: netlimit.NewTable(o.connLimits(log), nil, log, cm), certReport: report, admin: srv.AdminHandler()}
	if o.start != nil { // as OpenShift's server: /config/ and the probes only
		ls.nodes = srv.NodeHandler()
	}
	// Registered before anything runs: SIGHUP's default action ends the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return runLifecycle(ctx, o, srv, rl, ls, hup, reloadPolicy, log, stdout)
}

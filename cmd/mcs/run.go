package main

import (
	"context"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ignition-mcs/mcs/serve"
)

// run is mcs: flags, then the wiring of source, reloader and server, then
// their lifecycle (see lifecycle).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil || o == nil {
		return err
	}
	log, err := newLogger(o, stderr)
	if err != nil {
		return err
	}
	ro := o.render
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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
	srv, err := serve.New(serve.Config{Logger: log, Registry: reg, DefaultSpec: o.defaultSpec, Tokens: tokens, Gate: gate, Source: src.String(), Notify: notify, MaxInFlight: o.maxInFlight, ServingCert: servingCert(o)})
	if err != nil {
		return err
	}
	rl := &serve.Reloader{Source: src, Server: srv, Gate: gate, Debounce: o.debounce, Timeout: o.reloadTimeout, Logger: log, NodeFiles: nodeFiles(o)}
	ls := listenDeps{conns: newConnTable(o.connLimits(log), log, newConnMetrics(reg)), certReport: certReport(log, newCertMetrics(reg), srv), admin: srv.AdminHandler()}
	return lifecycle(ctx, o, srv, rl, ls, reloadPolicy, log, stdout)
}

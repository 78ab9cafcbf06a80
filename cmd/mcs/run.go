package main

import (
	"context"
	"io"

	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/internal/daemon"
	"github.com/ignition-mcs/mcs/internal/serving"
)

// run is mcs: flags, then serving.Run.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return server(parseFlags)(ctx, args, stdin, stdout, stderr)
}

// server is a server command (mcs, mcs start, mcs bootstrap): its command
// line read by parse, then serving.Run.
func server(parse func(args []string, stderr io.Writer) (*options, error)) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	return daemonCommand(parse, func(o *options) logOptions { return o.log }, func(ctx context.Context, o *options, cmd *daemon.Command, stdout io.Writer) error {
		return serving.Run(ctx, o.config(), cmd.Log, cmd.Registry, stdout)
	})
}

// daemonCommand is a long-running command: its command line read by parse
// (nil options: nothing to run, as for --help), the logger the flags logs
// returns ask for, daemon.Start, then run until it returns; Close after.
func daemonCommand[O any](parse func([]string, io.Writer) (*O, error), logs func(*O) logOptions, run func(context.Context, *O, *daemon.Command, io.Writer) error) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		o, err := parse(args, stderr)
		if err != nil || o == nil {
			return err
		}
		log, err := logs(o).logger(stderr)
		if err != nil {
			return err
		}
		cmd, err := daemon.Start(ctx, daemon.Config{Log: log})
		if err != nil {
			return err
		}
		defer cmd.Close()
		return run(ctx, o, cmd, stdout)
	}
}

// config is the serving.Config the flags ask for, with what cmd/mcs
// reads itself: the kubeconfig and the files served to nodes.
func (o *options) config() *serving.Config {
	c := o.Config
	c.TLSAsked = o.set["listen-tls"] || o.set["secure-port"]
	c.SpecGiven, c.MaxSpecGiven = o.set["spec"], o.set["max-spec"]
	c.TLS = o.tls.config()
	c.REST = func() (*rest.Config, error) { return restConfig(o.kubeAPIConfig) }
	c.NodeFiles = nodeFiles(o)
	if o.start != nil {
		c.Start = &o.start.Start
	}
	if o.bootstrap != nil {
		c.Bootstrap = &o.bootstrap.Bootstrap
	}
	return &c
}

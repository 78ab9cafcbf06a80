// Command storm measures a boot storm: thousands of nodes each fetching its config once over a new TLS connection.
//
// N simulated nodes, up to --inflight at once, each open a new TCP
// connection from one of --addrs loopback source addresses (127.1.x.y),
// make a full TLS handshake (no session resumption), send one
// GET /config/<pool> with the User-Agent and Accept of an Ignition era
// (cycling through them), Accept-Encoding: identity and a pool token, read
// the whole response, check its bytes and close: what a scale-up or a
// cluster's first boot does to the machine-config-server. The same storm
// runs against mcs and against a bare Go TLS server writing the bytes mcs
// wrote for each request, with the same certificate, alternating (A B A B),
// --rounds times each. Reported: each storm's completion time, latency
// p50/p99/max, failures, CPU, and each server's peak RSS (/proc). Exits 1
// when a goal is missed: every mcs storm complete without failures within
// --goal-time, the median of mcs/bare completion ratios at most
// --goal-ratio, mcs's peak RSS under --goal-rss.
//
// With -mco-src (a machine-config-operator checkout, built at run time)
// or -mco-bin, OpenShift's own machine-config-server joins the rotation,
// in its bootstrap mode, serving the same render: reported, never gated.
// It listens on every interface on fixed ports, so the whole storm then
// runs in a user and network namespace of its own (netns.go); when one
// cannot be made, or it fails, the storm goes on without it and says why.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "bare" {
		if err := serveBare(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "storm bare:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	if len(os.Args) > 1 && os.Args[1] == netnsCommand {
		err = runInNetns(ctx, os.Args[2:], os.Stdout)
	} else {
		err = run(ctx, os.Args[1:], os.Stdout)
	}
	if errors.Is(err, errGoalMissed) {
		os.Exit(1)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "storm:", err)
		os.Exit(2)
	}
}

type options struct {
	mcs, tree, pool string
	keyType         string
	nodes, inflight int
	addrs, rounds   int
	eras            []era
	goalTime        time.Duration
	goalRatio       float64
	goalRSSMiB      float64
	timeout         time.Duration
	// OpenShift's machine-config-server, reported beside mcs and not
	// gated: built from mcoSrc, or the binary mcoBin (mco.go).
	mcoSrc, mcoBin string
	// inNetns: this process runs in the private network namespace
	// OpenShift's server needs (netns.go).
	inNetns bool
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("storm", flag.ContinueOnError)
	var o options
	var eraList string
	fs.StringVar(&o.mcs, "mcs", "bin/mcs", "the mcs binary to measure")
	fs.StringVar(&o.tree, "tree", "../shared/realdata/aws", "the MachineConfig tree mcs serves (--dir)")
	fs.StringVar(&o.pool, "pool", "worker", "the pool every node fetches")
	fs.StringVar(&o.keyType, "key", "rsa2048", "the servers' key: rsa2048 (OpenShift's) or p256")
	fs.IntVar(&o.nodes, "n", 5000, "nodes in each storm")
	fs.IntVar(&o.inflight, "inflight", 1000, "nodes fetching at once")
	fs.IntVar(&o.addrs, "addrs", 200, "source addresses the nodes connect from (127.1.x.y)")
	fs.IntVar(&o.rounds, "rounds", 3, "storms against each server, alternating")
	fs.StringVar(&eraList, "eras", strings.Join(eraNames(), ","), "client eras the nodes cycle through (Ignition versions)")
	fs.DurationVar(&o.goalTime, "goal-time", 10*time.Second, "goal: every node served within this")
	fs.Float64Var(&o.goalRatio, "goal-ratio", 1.1, "goal: median completion time at most this times the bare server's")
	fs.Float64Var(&o.goalRSSMiB, "goal-rss", 200, "goal: mcs's peak RSS under this many MiB")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "limit for a server to start and for each storm")
	fs.StringVar(&o.mcoSrc, "mco-src", "", "also storm OpenShift's machine-config-server (reported, not gated), built from this\n"+
		"machine-config-operator source tree (a git clone of "+mcoRepo+")")
	fs.StringVar(&o.mcoBin, "mco-bin", "", "also storm OpenShift's machine-config-server (reported, not gated): this prebuilt binary")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.mcoSrc != "" && o.mcoBin != "" {
		return o, errors.New("-mco-src and -mco-bin: give one")
	}
	if o.nodes < 1 || o.inflight < 1 || o.rounds < 1 || o.addrs < 1 || o.addrs > 250*250 {
		return o, errors.New("-n, -inflight, -rounds and -addrs must be positive (-addrs at most 62500)")
	}
	var err error
	o.eras, err = erasNamed(eraList)
	return o, err
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	return runParsed(ctx, o, args, stdout)
}

// runParsed runs the storms o asks for; args are o's flags, for a run of
// the whole storm in a network namespace of its own.
func runParsed(ctx context.Context, o options, args []string, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "mcs-storm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tryMCO := true
	if !o.inNetns && o.mco() {
		// OpenShift's server binds every interface on fixed ports: the
		// whole storm moves into a network namespace of its own.
		err := reexecInNetns(ctx, dir, o, args, stdout)
		if !errors.As(err, new(skipMCO)) {
			return err
		}
		fmt.Fprintf(stdout, "mco: skipped: %v\n", err)
		tryMCO = false
	}
	f, err := newFixture(dir, o)
	if err != nil {
		return err
	}
	targets, cleanup, err := startServers(ctx, o, f)
	defer cleanup()
	if err != nil {
		return err
	}
	if tryMCO {
		if mco := addMCO(ctx, o, f, targets[0], stdout); mco != nil {
			defer mco.stop()
			targets = append(targets, mco)
		}
	}
	fmt.Fprintf(stdout, "storm: %d nodes, %d in flight, from %d addresses, pool %s, eras %s, %d rounds\n",
		o.nodes, o.inflight, o.addrs, o.pool, strings.Join(eraNames(o.eras...), " "), o.rounds)
	runs, err := rounds(ctx, o, f, targets, stdout)
	if err != nil {
		return err
	}
	return report(stdout, o, targets, runs)
}

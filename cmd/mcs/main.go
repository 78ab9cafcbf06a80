// Command mcs serves booting nodes their Ignition config, negotiated per client, from a directory of MachineConfigs.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// gcPercent is the GC target unless GOGC is set: mcs's live heap is mostly
// the served snapshot, long-lived, and requests make little garbage, so
// Go's default (100: collect when the heap has doubled) mostly lets RSS
// reach twice what is served. Measured at 102 pools under load: RSS 189 MB
// with 100, 151 MB with 50, and no fewer requests per second
// (docs/performance.md).
const gcPercent = 50

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := dispatch(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		if err != errUsage {
			fmt.Fprintln(os.Stderr, "mcs:", err)
		}
		os.Exit(exitCode(err))
	}
}

// dispatch runs the subcommand named first (controller, prune, pki, start,
// bootstrap, preflight), else the server.
func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "controller":
			return runController(ctx, args[1:], stdout, stderr)
		case "prune":
			return runPrune(ctx, args[1:], stdout, stderr)
		case "preflight":
			return runPreflight(ctx, args[1:], stdout, stderr)
		case "bootstrap":
			return runBootstrap(ctx, args[1:], stdin, stdout, stderr)
		case "start":
			return runStart(ctx, args[1:], stdin, stdout, stderr)
		case "pki":
			return runPKI(ctx, args[1:], stdout, stderr)
		}
	}
	return run(ctx, args, stdin, stdout, stderr)
}

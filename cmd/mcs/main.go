// Command mcs serves booting nodes their Ignition config, negotiated per client, from a directory of MachineConfigs.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := dispatch(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		if err != errUsage {
			fmt.Fprintln(os.Stderr, "mcs:", err)
		}
		os.Exit(exitCode(err))
	}
}

// dispatch runs the subcommand named first (controller, prune), else the
// server.
func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "controller":
			return runController(ctx, args[1:], stdout, stderr)
		case "prune":
			return runPrune(ctx, args[1:], stdout, stderr)
		}
	}
	return run(ctx, args, stdin, stdout, stderr)
}

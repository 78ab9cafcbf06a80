// Command render merges MachineConfigs into each pool's rendered config, as OpenShift does, written at the lowest Ignition spec that can express it.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		os.Exit(cmdline.Code(err))
	}
}

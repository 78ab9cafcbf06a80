// Command render merges MachineConfigs into each pool's rendered config, as OpenShift does, written at the lowest Ignition spec that can express it.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		code := exitInvalid
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		os.Exit(code)
	}
}

package serving

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/ignition-mcs/mcs/internal/lifecycle"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/serve/pipeline"
)

// run runs the reloader (which a signal on hup also triggers, after
// onHUP) and the listeners until ctx ends or a listener fails. When ctx
// ends, srv drains (not ready, still serving) for the shutdown delay.
// Then every listener is shut down, in-flight requests getting the
// shutdown grace to finish, and the reloader is waited for, as long again
// at most: a load stuck in a source must not keep the process alive.
func (c *Config) run(ctx context.Context, srv *serve.Server, rl *pipeline.Reloader, ls Listeners, hup <-chan os.Signal, onHUP func(), log *slog.Logger, stdout io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer func() {
		cancel()
		lifecycle.WaitAtMost(&bg, c.ShutdownGrace, "the reloader", log)
	}()
	trigger := make(chan struct{}, 1)
	bg.Go(func() { lifecycle.OnSignal(ctx, hup, trigger, onHUP, log) })
	bg.Go(func() { rl.Run(ctx, trigger) })

	servers, err := c.Listen(srv, log, ls)
	if err != nil {
		return err
	}
	var ss []lifecycle.Server
	for _, s := range servers {
		fmt.Fprintf(stdout, "mcs: listening on %s\n", s.Desc)
		ss = append(ss, lifecycle.Server{HTTP: s.HTTP, Serve: s.Serve})
	}
	return lifecycle.Serve(ctx, ss, lifecycle.Shutdown{Drain: srv.Drain, Delay: c.ShutdownDelay, Grace: c.ShutdownGrace}, log)
}

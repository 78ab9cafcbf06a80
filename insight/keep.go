package insight

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/source/kube"
)

// Keep brings the insights in line with current through sync
// (kube.InsightWriter's Sync), their references into runbooks (see
// DefaultRunbooks), at once and at each tick,
// until ctx ends. A failure is logged when it differs from the last one:
// a cluster without the API logs once, not every tick.
func Keep(ctx context.Context, sync func(context.Context, []kube.HealthInsight) (bool, error), current func() status.Status, ticks <-chan time.Time, now func() time.Time, runbooks string, log *slog.Logger) {
	last := ""
	for {
		_, err := sync(ctx, fromStatus(current(), now(), runbooks))
		if msg := fmt.Sprint(err); err != nil && msg != last && ctx.Err() == nil {
			log.Warn("health insights not written; retried", "err", err)
		}
		last = fmt.Sprint(err)
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
	}
}

package insight

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/source/kube"
)

// Syncer writes the health insights wanted (kube.InsightWriter).
type Syncer interface {
	Sync(ctx context.Context, desired []kube.HealthInsight) (changed bool, err error)
}

// Keep brings w's insights in line with status, at once and at each tick,
// until ctx ends. A failure is logged when it differs from the last one:
// a cluster without the API logs once, not every tick.
func Keep(ctx context.Context, w Syncer, status func() serve.Status, ticks <-chan time.Time, now func() time.Time, log *slog.Logger) {
	last := ""
	for {
		_, err := w.Sync(ctx, FromStatus(status(), now()))
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

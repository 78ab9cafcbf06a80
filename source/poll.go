package source

import (
	"context"
	"time"
)

// poll checks stamp every every and sends on changed whenever its value
// differs from the last, starting from last, until ctx ends. Polling, not
// inotify, because it also sees Kubernetes ConfigMap symlink swaps, NFS, and
// a directory removed and recreated. A signal already pending is enough (a
// reload reads everything again), so poll never blocks on changed.
func poll[T comparable](ctx context.Context, every time.Duration, last T, stamp func() T, changed chan<- struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if now := stamp(); now != last {
			last = now
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}
}

package controller

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// campaign waits for the Lease, leads until it is lost or ctx ends, and
// returns only once the leading goroutine has stopped: a replica that lost
// the Lease has nothing in flight when it campaigns again.
func (c *Controller) campaign(ctx context.Context) error {
	client, err := coordinationv1.NewForConfig(c.rest)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: c.cfg.LeaseNamespace, Name: c.cfg.LeaseName},
		Client:     client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: c.cfg.Identity},
	}
	var g leadGuard
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   c.cfg.LeaseDuration,
		RenewDeadline:   c.cfg.RenewDeadline,
		RetryPeriod:     c.cfg.RetryPeriod,
		ReleaseOnCancel: c.cfg.ReleaseOnCancel,
		Name:            c.cfg.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) { g.run(func() { c.lead(lctx) }) },
			OnStoppedLeading: func() {},
			OnNewLeader:      c.observeLeader,
		},
	})
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	le.Run(ctx)
	// Run returns once renewing stopped and the lead context is
	// cancelled; the writes in flight end with it.
	g.stop()
	c.setLeading(false)
	return nil
}

// leadGuard lets campaign wait for the leading goroutine, which
// leaderelection starts with go and may not have begun when Run returns.
type leadGuard struct {
	mu      sync.Mutex
	stopped bool
	done    chan struct{}
}

func (g *leadGuard) run(f func()) {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return
	}
	g.done = make(chan struct{})
	defer close(g.done)
	g.mu.Unlock()
	f()
}

// stop waits for a run under way; none starts after it.
func (g *leadGuard) stop() {
	g.mu.Lock()
	g.stopped = true
	done := g.done
	g.mu.Unlock()
	if done != nil {
		<-done
	}
}

func (c *Controller) observeLeader(identity string) {
	c.book.observeLeader(identity)
	c.log.Info("leader observed", "leader", identity)
}

func (c *Controller) setLeading(on bool) {
	was := c.book.setLeading(on, c.cfg.Identity)
	v := 0.0
	if on {
		v = 1
	}
	c.m.leader.Set(v)
	if was != on {
		c.log.Info("leadership changed", "leading", on)
	}
}

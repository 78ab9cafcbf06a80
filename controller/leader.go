package controller

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// campaign waits for the Lease, leads until it is lost or ctx ends, and
// returns only once the leading goroutine has stopped: a replica that lost
// the Lease has nothing in flight when it campaigns again.
func (c *Controller) campaign(ctx context.Context) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: c.cfg.LeaseNamespace, Name: c.cfg.LeaseName},
		Client:     c.lease,
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

// leaseClient is the Lease's own client: its own connection (a dial
// function of its own keeps client-go from sharing the cached transport)
// and its own rate limiter, so renewing never queues behind the writes of a
// hundred pools, nor behind the watch events they cause on the shared
// connection. (No request timeout of its own: the renew deadline bounds
// each renewal, and a shorter one lost the Lease to a loaded API server.)
func leaseClient(rc *rest.Config) (coordinationv1.CoordinationV1Interface, error) {
	lc := rest.CopyConfig(rc)
	lc.RateLimiter = nil
	// Leader election makes about one request per retry period.
	lc.QPS, lc.Burst = 5, 10
	lc.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	lc.UserAgent = rc.UserAgent + " (leader election)"
	return coordinationv1.NewForConfig(lc)
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

package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/admit/stored"
	"github.com/ignition-mcs/mcs/convert"
)

// storedCeiling is the webhook's ceiling as the watch of stored
// MachineConfigs reads it: unknown until the webhook has one.
type storedCeiling struct {
	mu    sync.Mutex
	spec  convert.Version
	known bool
	watch *stored.Watch
}

func (c *storedCeiling) get() (convert.Version, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spec, c.known
}

// set is the ceiling in force; the watch counts again at once.
func (c *storedCeiling) set(v convert.Version) {
	c.mu.Lock()
	changed := !c.known || c.spec != v
	c.spec, c.known = v, true
	c.mu.Unlock()
	if changed {
		c.watch.Refresh()
	}
}

// startStoredWatch runs, until ctx ends, the watch behind
// mcs_admit_unreadable_machineconfigs and /status's "stored": every
// MachineConfig stored that the rollback release cannot parse, per pool.
func startStoredWatch(ctx context.Context, api *apiClients, reg prometheus.Registerer, log *slog.Logger, resync time.Duration) (*stored.Watch, *storedCeiling, error) {
	c := &storedCeiling{}
	w, err := stored.New(stored.Config{Client: api.dynamic, Ceiling: c.get, Resync: resync, Registry: reg, Log: log.With("watch", "stored")})
	if err != nil {
		return nil, nil, err
	}
	c.watch = w
	w.Start(ctx)
	return w, c, nil
}

package controller

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// pruner deletes the rendered configs retention would, for the leader.
type pruner struct {
	dyn     dynamic.Interface
	meta    metadata.Interface
	m       *metrics
	book    *statusBook
	log     *slog.Logger
	keep    int
	dryRun  bool
	grace   time.Duration
	started time.Time
	named   func(name string) time.Time // when a pool last moved off it
}

// prune deletes (in a dry run: reports) the rendered configs retention
// would: in use by no pool and no node, older than the Keep newest of
// their pool, and named by no pool within the grace period. A node
// controller points nodes only at the config their pool names, reading the
// pool from a cache: the grace outlasts that cache's lag, and the delete's
// preconditions and the check after it (deleteConfigs) cover the rest.
func (p *pruner) prune(ctx context.Context) ([]string, error) {
	inv, err := takeInventory(ctx, p.dyn, p.meta)
	if err != nil {
		return nil, err
	}
	var plan []*RenderedConfig
	now := time.Now()
	for _, r := range inv.Plan(p.keep, "", 0) {
		// Before the grace has run since this replica started, it cannot
		// know which configs pools named just before.
		// A config created within it may be one a pool is about to name.
		if now.Sub(p.started) < p.grace || now.Sub(p.named(r.Name)) < p.grace || now.Sub(r.Created) < p.grace {
			continue
		}
		plan = append(plan, r)
	}
	if len(plan) == 0 {
		return nil, nil
	}
	done, err := deleteConfigs(ctx, p.dyn, p.meta, plan, p.dryRun)
	p.m.prunes.WithLabelValues(dryRunLabel(p.dryRun)).Add(float64(len(done)))
	for _, n := range done {
		p.log.Info("pruned rendered MachineConfig", "name", n, "dryRun", p.dryRun)
	}
	p.book.setPruned(done)
	return done, err
}

package controller

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

	// pruned are the configs this replica deleted within the grace (and
	// any it failed to create again), with when: each prune checks no pool
	// or node has started naming one, and creates it again if one has.
	pruned map[string]prunedConfig
}

type prunedConfig struct {
	obj *unstructured.Unstructured
	at  time.Time
}

// prune deletes (in a dry run: reports) the rendered configs retention
// would: in use by no pool and no node, older than the Keep newest of
// their pool, and named by no pool within the grace period. A node
// controller points nodes only at the config their pool names, reading the
// pool from a cache: the grace outlasts that cache's lag; who uses what is
// listed again right before the deletes, which carry preconditions, and
// right after (deleteConfigs); and for a grace after, every prune checks
// again that no pool or node names a config it deleted, creating it again
// if one does (watch).
func (p *pruner) prune(ctx context.Context) ([]string, error) {
	werr := p.watch(ctx)
	inv, err := takeInventory(ctx, p.dyn, p.meta)
	if err != nil {
		return nil, errors.Join(werr, err)
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
		return nil, werr
	}
	done, deleted, err := deleteConfigs(ctx, p.dyn, p.meta, plan, p.dryRun)
	p.m.prunes.WithLabelValues(dryRunLabel(p.dryRun)).Add(float64(len(done)))
	for _, n := range done {
		p.log.Info("pruned rendered MachineConfig", "name", n, "dryRun", p.dryRun)
		if obj := deleted[n]; obj != nil && !p.dryRun {
			p.keepPruned(n, obj, now)
		} else if !p.dryRun {
			p.restoredOne(n)
		}
	}
	p.book.setPruned(done)
	return done, errors.Join(werr, err)
}

func (p *pruner) keepPruned(name string, obj *unstructured.Unstructured, at time.Time) {
	if p.pruned == nil {
		p.pruned = map[string]prunedConfig{}
	}
	p.pruned[name] = prunedConfig{obj: obj, at: at}
}

// restoredOne counts a pruned config created again, and says so.
func (p *pruner) restoredOne(name string) {
	p.m.pruneRestores.Inc()
	p.log.Warn("a pruned rendered MachineConfig was named by a pool or node after the checks; created again", "name", name)
}

// watch creates again each config this replica pruned that a pool or node
// names now, and forgets those a grace old (or kept in a dry run: none).
func (p *pruner) watch(ctx context.Context) error {
	if len(p.pruned) == 0 {
		return nil
	}
	objs := map[string]*unstructured.Unstructured{}
	for n, pc := range p.pruned {
		objs[n] = pc.obj
	}
	restored, err := restoreInUse(ctx, p.dyn, p.meta, objs)
	for _, n := range restored {
		p.restoredOne(n)
		delete(p.pruned, n)
	}
	var re *restoreError
	pending := map[string]bool{}
	if errors.As(err, &re) {
		for _, n := range re.pending {
			pending[n] = true
		}
	}
	for n, pc := range p.pruned {
		if !pending[n] && time.Since(pc.at) >= p.grace {
			delete(p.pruned, n)
		}
	}
	if re != nil {
		return err
	}
	return nil
}

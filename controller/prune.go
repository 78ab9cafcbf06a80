package controller

import "context"

// prune deletes (in a dry run: reports) the rendered configs retention
// would: in use by no pool and no node, and older than the Keep newest of
// their pool.
func (c *Controller) prune(ctx context.Context) ([]string, error) {
	inv, err := takeInventory(ctx, c.dyn, c.meta)
	if err != nil {
		return nil, err
	}
	plan := inv.Plan(c.cfg.Keep, "", 0)
	if len(plan) == 0 {
		return nil, nil
	}
	done, err := deleteConfigs(ctx, c.meta, plan, c.cfg.DryRun)
	c.m.prunes.WithLabelValues(c.dryRunLabel()).Add(float64(len(done)))
	for _, n := range done {
		c.log.Info("pruned rendered MachineConfig", "name", n, "dryRun", c.cfg.DryRun)
	}
	c.setPruned(done)
	return done, err
}

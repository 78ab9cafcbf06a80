package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/ignition-mcs/mcs/render"
)

// PruneOptions are `mcs prune`'s, shaped like `oc adm prune
// renderedmachineconfigs`.
type PruneOptions struct {
	List    bool   // list every rendered config with why it is kept, delete nothing
	Pool    string // only this pool's configs (what is in use is always the whole cluster's)
	Keep    int    // beyond those in use, keep the newest Keep per pool
	Count   int    // delete at most the oldest Count (0: all that retention allows)
	Confirm bool   // delete; without it a dry run (dryRun=All) says what would go
}

// PruneReport is what a prune found and did.
type PruneReport struct {
	// Configs are the rendered configs (of the pool asked about), by pool
	// and newest first, each saying who uses it or why it is kept.
	Configs []*RenderedConfig
	// Planned are the names retention would delete (oldest first, within
	// --count); Deleted those deleted (in a dry run: that would be).
	Planned, Deleted []string
	InUse, Kept      int // configs in use, and kept though not in use
}

// Prune lists or prunes the rendered configs as o says; with List nothing
// is deleted. The report is returned with an error too, for what was done.
func Prune(ctx context.Context, dyn dynamic.Interface, meta metadata.Interface, o PruneOptions) (*PruneReport, error) {
	if o.Keep < 0 || o.Count < 0 {
		return nil, fmt.Errorf("keep and count cannot be negative")
	}
	inv, err := takeInventory(ctx, dyn, meta)
	if err != nil {
		return nil, err
	}
	if o.Pool != "" && !slices.Contains(inv.Pools, o.Pool) {
		return nil, errors.New(render.UnknownPool(o.Pool, inv.Pools, false))
	}
	plan := inv.Plan(o.Keep, o.Pool, o.Count)
	rep := &PruneReport{}
	for _, r := range plan {
		rep.Planned = append(rep.Planned, r.Name)
	}
	for _, r := range inv.Configs {
		if o.Pool != "" && r.Pool != o.Pool {
			continue
		}
		rep.Configs = append(rep.Configs, r)
		switch {
		case len(r.InUse) > 0:
			rep.InUse++
		case r.Kept != "":
			rep.Kept++
		}
	}
	if o.List {
		return rep, nil
	}
	rep.Deleted, _, err = deleteConfigs(ctx, dyn, meta, plan, !o.Confirm)
	return rep, err
}

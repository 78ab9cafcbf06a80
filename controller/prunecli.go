package controller

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
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

// Prune lists or prunes the rendered configs as o says, writing a report
// to out; it returns the names deleted (in a dry run, that would be).
func Prune(ctx context.Context, dyn dynamic.Interface, meta metadata.Interface, o PruneOptions, out io.Writer) ([]string, error) {
	if o.Keep < 0 || o.Count < 0 {
		return nil, fmt.Errorf("--keep and --count cannot be negative")
	}
	inv, err := takeInventory(ctx, dyn, meta)
	if err != nil {
		return nil, err
	}
	if o.Pool != "" && !slices.Contains(inv.Pools, o.Pool) {
		return nil, fmt.Errorf("MachineConfigPool %q not found (the pools are %s)", o.Pool, strings.Join(inv.Pools, ", "))
	}
	plan := inv.Plan(o.Keep, o.Pool, o.Count)
	if o.List {
		return nil, inv.write(out, o.Pool, plan)
	}
	verb := "deleted"
	if !o.Confirm {
		verb = "would delete"
		fmt.Fprintln(out, "Dry run: nothing is deleted. Add --confirm to delete the rendered MachineConfigs below.")
	}
	done, err := deleteConfigs(ctx, dyn, meta, plan, !o.Confirm)
	for _, n := range done {
		fmt.Fprintf(out, "%s rendered MachineConfig %s\n", verb, n)
	}
	fmt.Fprintf(out, "%d %s; %d in use and %d kept (--keep %d per pool) are not\n", len(done), verb, inv.count(o.Pool, true), inv.count(o.Pool, false), o.Keep)
	return done, err
}

// count counts the pool's (or every) configs in use, or kept though not in use.
func (inv *inventory) count(pool string, inUse bool) int {
	n := 0
	for _, r := range inv.Configs {
		if pool != "" && r.Pool != pool {
			continue
		}
		if (inUse && len(r.InUse) > 0) || (!inUse && len(r.InUse) == 0 && r.Kept != "") {
			n++
		}
	}
	return n
}

func (inv *inventory) write(out io.Writer, pool string, plan []*renderedConfig) error {
	prune := map[string]bool{}
	for _, r := range plan {
		prune[r.Name] = true
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tNAME\tCREATED\tSTATUS")
	for _, r := range inv.Configs {
		if pool != "" && r.Pool != pool {
			continue
		}
		status := "kept: " + r.Kept
		switch {
		case len(r.InUse) > 0:
			status = "in use: " + strings.Join(r.InUse, ", ")
		case prune[r.Name]:
			status = "prunable"
		case r.Kept == "":
			status = "prunable (beyond --count)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Pool, r.Name, r.Created.UTC().Format(time.RFC3339), status)
	}
	return tw.Flush()
}

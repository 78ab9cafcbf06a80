package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ignition-mcs/mcs/controller"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

// runPrune is `mcs prune [list]`, shaped like `oc adm prune
// renderedmachineconfigs`: a dry run unless --confirm.
func runPrune(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o controller.PruneOptions
	if len(args) > 0 && args[0] == "list" {
		o.List, args = true, args[1:]
	}
	fs := cmdline.NewFlagSet("mcs prune", "Usage: mcs prune [list] [flags]\n\nLists (list) or prunes rendered MachineConfigs. Never deletes one in use: named by a pool's\nspec or status configuration, or by a Node's currentConfig or desiredConfig annotation.\n", stderr)
	connect := kubeconfigFlag(fs)
	fs.StringVar(&o.Pool, "pool-name", "", "only this pool's rendered configs (in use is judged over every pool and node)")
	fs.IntVar(&o.Keep, "keep", controller.DefaultKeep, "beyond those in use, keep the newest N per pool (0: oc's default, delete all not in use)")
	fs.IntVar(&o.Count, "count", 0, "delete at most the N oldest prunable configs (0: all)")
	fs.BoolVar(&o.Confirm, "confirm", false, "delete; without it, a dry run says what would be deleted")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	if o.Keep < 0 || o.Count < 0 {
		return cmdline.Mistake(fs, fmt.Errorf("--keep and --count: want 0 or more (got %d and %d)", o.Keep, o.Count))
	}
	api, err := connect()
	if err != nil {
		return err
	}
	if !o.List && !o.Confirm {
		fmt.Fprintln(stdout, "Dry run: nothing is deleted. Add --confirm to delete the rendered MachineConfigs below.")
	}
	rep, err := controller.Prune(ctx, api.Dynamic, api.Metadata, o)
	if rep == nil {
		return err
	}
	if o.List {
		return writePruneList(stdout, rep)
	}
	verb := "deleted"
	if !o.Confirm {
		verb = "would delete"
	}
	for _, n := range rep.Deleted {
		fmt.Fprintf(stdout, "%s rendered MachineConfig %s\n", verb, n)
	}
	fmt.Fprintf(stdout, "%d %s; %d in use and %d kept (--keep %d per pool) are not\n", len(rep.Deleted), verb, rep.InUse, rep.Kept, o.Keep)
	return err
}

// writePruneList is `mcs prune list`: every rendered config, in use (and
// by whom), kept (and why), or prunable.
func writePruneList(out io.Writer, rep *controller.PruneReport) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tNAME\tCREATED\tSTATUS")
	for _, r := range rep.Configs {
		status := "kept: " + r.Kept
		switch {
		case len(r.InUse) > 0:
			status = "in use: " + strings.Join(r.InUse, ", ")
		case slices.Contains(rep.Planned, r.Name):
			status = "prunable"
		case r.Kept == "":
			status = "prunable (beyond --count)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Pool, r.Name, r.Created.UTC().Format(time.RFC3339), status)
	}
	return tw.Flush()
}

package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/admit/stored"
	"github.com/ignition-mcs/mcs/convert"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

const lowerExistingUsage = `Usage: mcs admit lower-existing [--confirm] [flags]

Lists every MachineConfig stored at a spec the release a rollback returns to
cannot parse, one line each with the spec it is stored at and the spec the
webhook's conversion stores it at, or the fields that need more than the
ceiling. With --confirm, stores each of the first again at that spec: the
same name and an equivalent config, an Update of spec.config alone (labels,
annotations and owner references untouched; a conflict is read again and
redone), so rendered configs that nodes are on stay as they are.
Without --confirm nothing is written. With --confirm, exits 1 when some
remain (a failed write, or a config that needs more than the ceiling).
`

// runAdmitLowerExisting is `mcs admit lower-existing`.
func runAdmitLowerExisting(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cmdline.NewFlagSet("mcs admit lower-existing", lowerExistingUsage, stderr)
	connect := kubeconfigFlag(fs)
	confirm := fs.Bool("confirm", false, "store them again; without it, a dry run lists them and writes nothing")
	var ceiling convert.Version
	fs.Var(cmdline.Version(&ceiling), "max-spec", "the newest spec `VERSION` the release a rollback returns to parses (default: from the ClusterVersion's history, as mcs admit finds it)")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	api, err := connect()
	if err != nil {
		return err
	}
	from := "--max-spec"
	if ceiling.IsZero() {
		c, err := admit.CeilingFromCluster(ctx, api.Dynamic)
		if err != nil {
			return fmt.Errorf("%w (or give --max-spec)", err)
		}
		ceiling, from = c.Spec, c.Source
	}
	fmt.Fprintf(stdout, "ceiling: %s\n", describeCeiling(ceiling, from))
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	var n lowerCounts
	err = stored.LowerExisting(ctx, stored.Restore{Client: api.Dynamic, Ceiling: ceiling, Confirm: *confirm}, func(o stored.Outcome) {
		fmt.Fprintln(tw, n.line(o, *confirm))
	})
	tw.Flush()
	if err != nil {
		return err
	}
	return n.summary(stdout, *confirm)
}

func describeCeiling(v convert.Version, from string) string {
	if v.IsZero() {
		return "none: " + from + "\nlisted: MachineConfigs stored above the lowest spec that holds them"
	}
	return fmt.Sprintf("%s: %s", v, from)
}

// lowerCounts tallies the outcomes for the closing line.
type lowerCounts struct{ fixable, written, failed, stuck int }

// line is one outcome as a line: name, pools, spec before -> after, and
// what was done.
func (n *lowerCounts) line(o stored.Outcome, confirm bool) string {
	head := fmt.Sprintf("%s\tpool %s\t", o.Name, strings.Join(o.Pools, ","))
	switch {
	case o.To == "":
		n.stuck++
		why := o.Problem
		if why == "" {
			why = "needs " + o.Lowest
			if len(o.Forces) > 0 {
				why += ": " + strings.Join(o.Forces, "; ")
			}
		}
		return head + fmt.Sprintf("%s\tleft as it is: %s", cmp.Or(o.Stored, "no spec"), why)
	case !confirm:
		n.fixable++
		return head + fmt.Sprintf("%s -> %s\twould be stored again", o.Stored, o.To)
	case o.Err != nil:
		n.failed++
		return head + fmt.Sprintf("%s -> %s\tfailed: %v", o.Stored, o.To, o.Err)
	case o.Gone:
		return head + fmt.Sprintf("%s -> %s\tchanged meanwhile: nothing to do", o.Stored, o.To)
	default:
		n.written++
		return head + fmt.Sprintf("%s -> %s\tstored again", o.Stored, o.To)
	}
}

func (n *lowerCounts) summary(w io.Writer, confirm bool) error {
	switch {
	case !confirm && n.fixable+n.stuck == 0, confirm && n.written+n.failed+n.stuck == 0:
		fmt.Fprintln(w, "every stored MachineConfig is readable by the rollback release")
		return nil
	case !confirm:
		fmt.Fprintf(w, "dry run: %d would be stored again, %d left as they are; run with --confirm to store them\n", n.fixable, n.stuck)
		return nil
	}
	fmt.Fprintf(w, "%d stored again, %d failed, %d left as they are\n", n.written, n.failed, n.stuck)
	if n.failed+n.stuck > 0 {
		return cmdline.Fail(1, fmt.Errorf("MachineConfigs the rollback release cannot parse remain: %d", n.failed+n.stuck))
	}
	return nil
}

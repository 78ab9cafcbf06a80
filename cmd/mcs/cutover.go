package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/ignition-mcs/mcs/cutover"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

const cutoverUsage = `Usage: mcs cutover plan|apply|back [flags]

Moves OpenShift's machine-config-server DaemonSet to mcs start and back
(docs/cutover.md). Every change is a server-side apply, a scale or a JSON
patch of one entry; nothing is replaced wholesale.

plan:  reads the cluster, changing nothing: the server running and the
       arguments mcs start would take over, the operator's replicas, the
       ClusterVersion overrides kept and the JSON patch apply would send.
apply: mcs's ServiceAccount and read-only RBAC; mcs preflight as that
       ServiceAccount (stops on a blocker); the ClusterVersion override for
       the operator's Deployment appended (other entries kept); the operator
       scaled to 0 and its pods gone; deploy/openshift's DaemonSet applied
       with the running server's arguments and --image; its rollout, which
       replaces OpenShift's server one node at a time, waited for.
back:  the operator scaled up again, only the override apply added
       removed, and, once the operator's own server has rolled out in the
       DaemonSet, mcs's ServiceAccount and RBAC deleted. Until then mcs
       keeps serving: there is no moment without a server.
`

// cutoverCommand is one mcs cutover verb's flags.
type cutoverCommand struct {
	fs         *flag.FlagSet
	kubeconfig string
	image      string
	timeout    time.Duration
	interval   time.Duration
	output     string
	preflight  bool
}

func newCutoverCommand(verb string, stderr io.Writer) *cutoverCommand {
	c := &cutoverCommand{fs: cmdline.NewFlagSet("mcs cutover "+verb, cutoverUsage, stderr)}
	c.fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of a cluster admin (default: in-cluster, then $KUBECONFIG or ~/.kube/config)")
	c.fs.StringVar(&c.image, "image", "", "apply: the mcs `IMAGE` the DaemonSet runs (required)")
	c.fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "apply, back: how long each wait (the operator's pods ending, a rollout) may take")
	c.fs.DurationVar(&c.interval, "interval", 2*time.Second, "how often a wait looks again")
	cmdline.Choice(c.fs, &c.output, "o", "text", "plan: output", "text", "json")
	c.fs.BoolVar(&c.preflight, "preflight", true, "apply: run mcs preflight as mcs's ServiceAccount first and stop on a blocker")
	return c
}

// runCutover is mcs cutover plan|apply|back.
func runCutover(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verb, err := verbOf("mcs cutover", []string{"plan", "apply", "back"}, args, func() *flag.FlagSet { return newCutoverCommand("plan|apply|back", stderr).fs }, stderr)
	if err != nil {
		return err
	}
	c := newCutoverCommand(verb, stderr)
	if err := cmdline.Parse(c.fs, args[1:]); err != nil {
		return err
	}
	if verb == "apply" && c.image == "" {
		return cmdline.Mistake(c.fs, errors.New("--image is required: the mcs image the DaemonSet runs (REGISTRY/mcs:TAG)"))
	}
	co, err := c.connect(stderr)
	if err != nil {
		return err
	}
	switch verb {
	case "back":
		if err := co.Back(ctx); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "OpenShift's machine-config-server serves again; mcs's ServiceAccount and RBAC are deleted.")
		return nil
	case "plan":
		p, err := co.Plan(ctx)
		if err != nil {
			return err
		}
		return c.writePlan(stdout, p)
	}
	return c.apply(ctx, co, stdout, stderr)
}

// connect builds the cutover from the flags and deploy/openshift.
func (c *cutoverCommand) connect(stderr io.Writer) (*cutover.Cutover, error) {
	api, err := connect(c.kubeconfig)
	if err != nil {
		return nil, err
	}
	return cutover.New(cutover.Config{Kube: api.Kube, Dynamic: api.Dynamic, Image: c.image,
		Interval: c.interval, Timeout: c.timeout, Logger: slog.New(slog.NewTextHandler(stderr, nil))})
}

// apply is mcs cutover apply: plan, prepare, preflight, apply.
func (c *cutoverCommand) apply(ctx context.Context, co *cutover.Cutover, stdout, stderr io.Writer) error {
	p, err := co.Plan(ctx)
	if err != nil {
		return err
	}
	if p.State != cutover.StateOpenShift {
		return fmt.Errorf("%w: the cluster runs %s (mcs cutover plan says more)", cutover.ErrNotOpenShift, p.State)
	}
	if err := co.Prepare(ctx); err != nil {
		return err
	}
	if c.preflight {
		args := []string{"--service-account", cutover.Namespace + "/mcs-server"}
		if c.kubeconfig != "" {
			args = append(args, "--kubeconfig", c.kubeconfig)
		}
		if err := runPreflight(ctx, args, stdout, stderr); err != nil {
			return fmt.Errorf("preflight: %w: nothing a node sees was changed (only mcs's ServiceAccount and RBAC are in place; mcs cutover back is not needed)", err)
		}
	}
	if err := co.Apply(ctx, p); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "mcs serves: DaemonSet %s/%s runs %s with OpenShift's arguments; go back with mcs cutover back.\n", cutover.Namespace, cutover.DaemonSet, c.image)
	return nil
}

// writePlan says what apply or back would do.
func (c *cutoverCommand) writePlan(w io.Writer, p *cutover.Plan) error {
	if c.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	fmt.Fprintf(w, "server now: %s\n", map[cutover.State]string{
		cutover.StateOpenShift: "OpenShift's machine-config-server (mcs cutover apply replaces it)",
		cutover.StateMCS:       "mcs (mcs cutover back returns to OpenShift's)",
		cutover.StateNoServer:  "none: no DaemonSet " + cutover.Namespace + "/" + cutover.DaemonSet,
	}[p.State])
	fmt.Fprintf(w, "arguments: %s\n", strings.Join(p.Args, " "))
	fmt.Fprintf(w, "operator: Deployment %s/%s, replicas %d (apply scales it to 0, back to %d)\n", cutover.Namespace, cutover.Operator, p.OperatorReplicas, max(p.OperatorReplicas, 1))
	fmt.Fprintf(w, "ClusterVersion overrides of others, kept: %d\n", p.OtherOverrides)
	if p.Patch != nil {
		fmt.Fprintf(w, "JSON patch apply sends ClusterVersion version:\n  %s\n", p.Patch)
	} else if p.Override != nil {
		fmt.Fprintln(w, "the operator's Deployment is unmanaged already: apply leaves the overrides as they are")
	}
	return nil
}

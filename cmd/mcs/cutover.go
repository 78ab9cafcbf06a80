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
	"github.com/ignition-mcs/mcs/internal/daemon"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

const cutoverUsage = `Usage: mcs cutover plan|apply|back [flags]

Moves OpenShift's machine-config-server DaemonSet to mcs start and back
(docs/cutover.md). Every change is a server-side apply, a scale or a JSON
patch of one entry; nothing is replaced wholesale.

plan:  reads the cluster, changing nothing: which server the DaemonSet's
       pods run (image, ready) and which it asks for, a cutover stopped
       part-way, the arguments mcs start would take over, the operator's
       replicas, the ClusterVersion overrides kept and the JSON patch apply
       would send.
apply: a transaction. First, writing nothing, it checks the namespaces,
       the kinds served and every right it and back use; then it records
       what it found and each change before making it (ConfigMap
       openshift-machine-config-operator/mcs-cutover); then mcs's
       ServiceAccount and read-only RBAC; mcs preflight as that
       ServiceAccount; the ClusterVersion override for the operator's
       Deployment appended; the operator scaled to 0 and its pods gone;
       deploy/openshift's DaemonSet applied with the running server's
       arguments and --image; its rollout waited for (a pod that cannot
       pull the image stops it at once). On a failure it says what is
       changed and what not, and the command that restores the cluster
       (mcs cutover back); run again, it resumes.
back:  undoes what the record says apply began: the operator scaled up
       again, only the override apply added removed, and, once the
       operator's own server has rolled out in the DaemonSet, mcs's
       ServiceAccount, RBAC and record deleted. Until then mcs keeps
       serving: there is no moment without a server.
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
	co, err := c.connect(verb, stdout, stderr)
	if err != nil {
		return err
	}
	switch verb {
	case "back":
		if err := co.Back(ctx); err != nil {
			return c.stopped("back", co, err)
		}
		fmt.Fprintln(stdout, "Restored: OpenShift's machine-config-server serves; the operator runs at its former replicas, the override apply added is removed, and mcs's ServiceAccount, RBAC and cutover record are deleted.")
		return nil
	case "plan":
		p, err := co.Plan(ctx)
		if err != nil {
			return err
		}
		return c.writePlan(stdout, p)
	}
	p, err := co.Plan(ctx)
	if err != nil {
		return err
	}
	if r := p.Record; r != nil && !r.Done {
		fmt.Fprintf(stdout, "Resuming the cutover recorded in ConfigMap %s/%s (begun: %s).\n", cutover.Namespace, cutover.RecordName, joinSteps(r.Begun))
	}
	if err := co.Apply(ctx, p); err != nil {
		return c.stopped("apply", co, err)
	}
	fmt.Fprintf(stdout, "mcs serves: DaemonSet %s/%s runs %s with OpenShift's arguments; go back with %s.\n", cutover.Namespace, cutover.DaemonSet, c.image, c.command("back"))
	return nil
}

// connect builds the cutover from the flags and deploy/openshift; apply
// runs mcs preflight as mcs's ServiceAccount once its RBAC is in place.
func (c *cutoverCommand) connect(verb string, stdout, stderr io.Writer) (*cutover.Cutover, error) {
	rc, err := restConfig(c.kubeconfig)
	if err != nil {
		return nil, err
	}
	// Apply's checks ask about some forty requests at once; client-go's
	// default of 5 a second would make them wait for its own limiter.
	rc.QPS, rc.Burst = 50, 100
	api, err := daemon.NewClients(rc)
	if err != nil {
		return nil, err
	}
	cfg := cutover.Config{Kube: api.Kube, Dynamic: api.Dynamic, Image: c.image,
		Interval: c.interval, Timeout: c.timeout, Logger: slog.New(slog.NewTextHandler(stderr, nil))}
	if verb == "apply" && c.preflight {
		cfg.Preflight = func(ctx context.Context) error {
			args := []string{"--service-account", cutover.Namespace + "/mcs-server"}
			if c.kubeconfig != "" {
				args = append(args, "--kubeconfig", c.kubeconfig)
			}
			return runPreflight(ctx, args, stdout, stderr)
		}
	}
	return cutover.New(cfg)
}

// stepWords name apply's steps for people.
var stepWords = map[cutover.Step]string{
	cutover.StepCheck:     "the checks before any change",
	cutover.StepRecord:    "the cutover's record",
	cutover.StepRBAC:      "mcs's ServiceAccount and RBAC",
	cutover.StepPreflight: "mcs preflight as mcs's ServiceAccount",
	cutover.StepOverride:  "the ClusterVersion override of the operator's Deployment",
	cutover.StepScale:     "the operator scaled to 0",
	cutover.StepDaemonSet: "DaemonSet " + cutover.DaemonSet + " on mcs",
	cutover.StepRollout:   "the rollout of DaemonSet " + cutover.DaemonSet,
}

// stopped is verb's failure with the cluster's state read afresh: what is
// changed and what not, and the one command that restores it.
func (c *cutoverCommand) stopped(verb string, co *cutover.Cutover, err error) error {
	var se *cutover.StepError
	if errors.As(err, &se) {
		err = fmt.Errorf("cutover %s stopped at %s: %w", verb, stepWords[se.Step], se.Err)
	}
	var ce *cutover.CheckError
	if errors.As(err, &ce) {
		var b strings.Builder
		for _, bl := range ce.Blockers {
			fmt.Fprintf(&b, "\n  BLOCKER  %s: %v", bl.What, bl.Err)
			if bl.Capability != "" {
				fmt.Fprintf(&b, " (the namespace comes with the cluster's %s capability, which is not enabled: create the namespace, empty, for mcs's Role there, or enable the capability)", bl.Capability)
			}
		}
		err = fmt.Errorf("cutover %s stopped at %s:%s", verb, stepWords[cutover.StepCheck], b.String())
	}
	// A context of its own: the state is worth reading when the
	// command's own has run out.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	changes, rerr := co.Report(ctx)
	if rerr != nil {
		return fmt.Errorf("%w\nthe cluster's state could not be read (%v): mcs cutover plan says it", err, rerr)
	}
	var changed, kept []string
	for _, ch := range changes {
		if ch.Changed {
			changed = append(changed, fmt.Sprintf("%s: %s", stepWords[ch.Step], ch.Detail))
		} else if ch.Step != cutover.StepRecord {
			kept = append(kept, stepWords[ch.Step])
		}
	}
	switch {
	case len(changed) == 0 && verb == "back":
		return err
	case len(changed) == 0:
		return fmt.Errorf("%w\nnothing was changed: the cluster is as it was; once the cause is fixed, run %s", err, c.command(verb))
	}
	resume := c.command("apply")
	if pe := (*cutover.PullError)(nil); errors.As(err, &pe) {
		resume = strings.Replace(resume, "--image "+c.image, "--image IMAGE (one the nodes can pull)", 1)
	}
	next := "restore it with: " + c.command("back") + "\nor, once the cause is fixed, resume with: " + resume
	if verb == "back" {
		next = "once the cause is fixed, finish restoring it with: " + c.command("back")
	}
	if len(kept) == 0 {
		kept = []string{"none"}
	}
	return fmt.Errorf("%w\nchanged: %s\nnot changed: %s\n%s", err, strings.Join(changed, "; "), strings.Join(kept, "; "), next)
}

// command is mcs cutover verb as this one was run.
func (c *cutoverCommand) command(verb string) string {
	s := "mcs cutover " + verb
	if verb == "apply" {
		s += " --image " + c.image
	}
	if c.kubeconfig != "" {
		s += " --kubeconfig " + c.kubeconfig
	}
	return s
}

func joinSteps(steps []cutover.Step) string {
	s := make([]string, len(steps))
	for i, st := range steps {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

// writePlan says what runs, and what apply or back would do.
func (c *cutoverCommand) writePlan(w io.Writer, p *cutover.Plan) error {
	if c.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	fmt.Fprintf(w, "server running: %s\n", serversRunning(p.Pods))
	for _, pod := range p.Pods {
		ready := "ready"
		if !pod.Ready {
			ready = "not ready " + pod.Waiting
		}
		fmt.Fprintf(w, "  pod %s on %s: %s, image %s, %s\n", pod.Name, pod.Node, serverWords[pod.Server], pod.Image, ready)
	}
	rollout := fmt.Sprintf("%d desired, %d updated, %d available", p.Desired, p.Updated, p.Available)
	if p.ObservedGeneration < p.Generation {
		rollout = fmt.Sprintf("generation %d not acted on yet by the DaemonSet controller (the counts, %s, are of generation %d)", p.Generation, rollout, p.ObservedGeneration)
	}
	fmt.Fprintf(w, "DaemonSet asks for: %s, image %s; rollout: %s\n", map[cutover.State]string{
		cutover.StateOpenShift: "OpenShift's machine-config-server (mcs cutover apply replaces it)",
		cutover.StateMCS:       "mcs (mcs cutover back returns to OpenShift's)",
		cutover.StateNoServer:  "nothing: no DaemonSet " + cutover.Namespace + "/" + cutover.DaemonSet,
	}[p.State], p.Image, rollout)
	if r := p.Record; r != nil && !r.Done {
		fmt.Fprintf(w, "cutover: stopped part-way (begun: %s): mcs cutover apply resumes it, mcs cutover back restores the cluster\n", joinSteps(r.Begun))
	}
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

var serverWords = map[cutover.State]string{cutover.StateOpenShift: "OpenShift's", cutover.StateMCS: "mcs"}

// serversRunning says which server the pods run, and how many are ready.
func serversRunning(pods []cutover.Pod) string {
	if len(pods) == 0 {
		return "none: no pod of DaemonSet " + cutover.Namespace + "/" + cutover.DaemonSet + " exists"
	}
	var parts []string
	for _, s := range []cutover.State{cutover.StateMCS, cutover.StateOpenShift} {
		n, ready := 0, 0
		for _, p := range pods {
			if p.Server == s {
				n++
				if p.Ready {
					ready++
				}
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s on %d of %d pods (%d ready)", serverWords[s], n, len(pods), ready))
		}
	}
	return strings.Join(parts, "; ")
}

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/admitd"
	"github.com/ignition-mcs/mcs/internal/authtokens"
	"github.com/ignition-mcs/mcs/internal/daemon"
	"github.com/ignition-mcs/mcs/netlimit"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

type admitOptions struct {
	listen, cert, key string
	kubeconfig        string
	maxSpec           convert.Version
	aboveCeiling      string
	recheck           time.Duration
	maxReviews        int
	conns             netlimit.Limits
	tokenFile         string
	clientCA          string
	log               logOptions
}

func parseAdmitFlags(args []string, stderr io.Writer) (*admitOptions, error) {
	o := &admitOptions{}
	fs := cmdline.NewFlagSet("mcs admit", "Usage: mcs admit [flags]\n       mcs admit lower-existing [--confirm] [flags]   (see 'mcs admit lower-existing --help')\n       mcs admit webhook-config --url URL --ca-file FILE   (see 'mcs admit webhook-config --help')\n\nA mutating admission webhook for MachineConfigs: stores each one's spec.config at the lowest\nIgnition spec able to express it, proven lossless, beside OpenShift's own controllers\n(docs/admission.md). lower-existing stores again, the same way, those stored before it;\nwebhook-config prints the MutatingWebhookConfiguration for a cluster without OpenShift's service CA.\nEvery flag can also be set as MCS_<FLAG>.\n", stderr)
	fs.StringVar(&o.listen, "listen", ":9443", "address of the webhook (HTTPS: /mutate, /status, /metrics, /healthz, /readyz)")
	fs.StringVar(&o.cert, "cert", "/etc/ssl/mcs-admit/tls.crt", "serving certificate (PEM), re-read when it changes")
	fs.StringVar(&o.key, "key", "/etc/ssl/mcs-admit/tls.key", "serving key (PEM), re-read when it changes")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster, then $KUBECONFIG or ~/.kube/config)")
	fs.Var(cmdline.Version(&o.maxSpec), "max-spec", "warn above this spec `VERSION` (default: the newest spec the release a rollback returns to reads, from the ClusterVersion; none without one)")
	cmdline.Choice(fs, &o.aboveCeiling, "above-ceiling", "warn", "a person's MachineConfig that needs more than the ceiling: warn, or deny it (OpenShift's own controllers are only warned)", "warn", "deny")
	fs.DurationVar(&o.recheck, "recheck", 5*time.Minute, "how often the ClusterVersion is read again for the ceiling")
	fs.IntVar(&o.maxReviews, "max-reviews", 8, "reviews under way at once, shared fairly between client addresses; one more waits a second for a slot, then is answered 503 (the API server applies the failurePolicy)")
	fs.IntVar(&o.conns.Max, "max-connections", 256, "client connections open at once; past it an idle one is closed, else the new one (0: no bound)")
	fs.IntVar(&o.conns.PerClient, "max-connections-per-client", 32, "client connections open at once from one address (0: no bound)")
	fs.StringVar(&o.clientCA, "client-ca-file", "", "CA bundle (PEM) of the client certificate the API server presents to webhooks (its admission configuration's kubeconfig): reviews without one it signed are refused 403; without it any client's reviews are answered")
	fs.StringVar(&o.tokenFile, "auth-token-file", "", "bearer tokens, one a line, that may read /status and /metrics (mode 0600, re-read when it changes); without it anyone who reaches the webhook may")
	o.log.define(fs)
	if err := cmdline.Parse(fs, args); err != nil {
		return nil, err
	}
	if o.maxReviews <= 0 {
		return nil, cmdline.Mistake(fs, fmt.Errorf("--max-reviews: want a positive number (got %d)", o.maxReviews))
	}
	if o.recheck <= 0 {
		return nil, cmdline.Mistake(fs, fmt.Errorf("--recheck: want a positive duration (got %s)", o.recheck))
	}
	if !o.maxSpec.IsZero() && (o.maxSpec.Major != 3 || !convert.IsOutputVersion(o.maxSpec)) {
		return nil, cmdline.Mistake(fs, fmt.Errorf("--max-spec %s: want a spec-3 version mcs writes: %s", o.maxSpec, convert.VersionList(convert.OutputVersions[1:])))
	}
	return o, nil
}

// runAdmit is `mcs admit`: the webhook until ctx ends, or lower-existing.
func runAdmit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "lower-existing" {
		return runAdmitLowerExisting(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "webhook-config" {
		return runAdmitWebhookConfig(args[1:], stdout, stderr)
	}
	return daemonCommand(parseAdmitFlags, func(o *admitOptions) logOptions { return o.log }, serveAdmit)(ctx, args, stdin, stdout, stderr)
}

// serveAdmit is the webhook until ctx ends. klogbridge (in daemon) routes
// controller-runtime's logger too (the certificate watcher logs through
// it): main's bridge, never a process-wide set here.
func serveAdmit(ctx context.Context, o *admitOptions, cmd *daemon.Command, stdout io.Writer) error {
	if err := admitd.CheckPair(o.cert, o.key); err != nil {
		return fmt.Errorf("%w (make one: docs/admission.md#try-it-on-any-kubernetes)", err)
	}
	rc, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	if err := cmd.Connect(rc); err != nil {
		return err
	}
	tokens, err := adminTokens(o.tokenFile, cmd)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	fmt.Fprintf(stdout, "mcs admit: listening on https://%s%s (above the ceiling: %s; ceiling: %s)\n", ln.Addr(), admit.MutatePath, o.aboveCeiling, ceilingWords(o.maxSpec))
	return admitd.Serve(ctx, ln, admitd.Config{
		Client: cmd.API.Dynamic, Registry: cmd.Registry, Log: cmd.Log, Recorder: cmd.Recorder("mcs-admit"),
		Deny: o.aboveCeiling == "deny", MaxSpec: o.maxSpec, Recheck: o.recheck, Cert: o.cert, Key: o.key,
		Conns: o.conns, MaxReviews: o.maxReviews, Tokens: tokens, ClientCA: o.clientCA,
	})
}

// ceilingWords says at start where the ceiling comes from.
func ceilingWords(maxSpec convert.Version) string {
	if !maxSpec.IsZero() {
		return "--max-spec " + maxSpec.String()
	}
	return "from the ClusterVersion's history, re-read every --recheck; without a ClusterVersion, none: lowest spec only (see /status)"
}

// adminTokens are the tokens of file (as mcs reads --auth-token-file)
// that may read /status and /metrics: those scoped to no pool; nil
// without a file.
func adminTokens(file string, cmd *daemon.Command) (func() [][]byte, error) {
	if file == "" {
		return nil, nil
	}
	all, err := authtokens.File(file, nil, cmd.Log)
	if err != nil {
		return nil, fmt.Errorf("--auth-token-file: %w", err)
	}
	return func() [][]byte {
		var out [][]byte
		for _, t := range all() {
			if len(t.Pools) == 0 {
				out = append(out, t.Secret)
			}
		}
		return out
	}, nil
}

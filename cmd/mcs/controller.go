package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/controller"
	"github.com/ignition-mcs/mcs/internal/daemon"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

type controllerOptions struct {
	kubeconfig                 string
	controllerConfig           string
	render                     render.Options // spec bounds
	log                        logOptions
	listen                     string
	identity                   string
	leaseNamespace, leaseName  string
	leaseDuration, renewWithin time.Duration
	retryPeriod                time.Duration
	dryRun, prune              bool
	keep                       int
	resync, debounce           time.Duration
	workers                    int
	pruneGrace                 time.Duration
	kubeQPS                    float64
	kubeBurst                  int
	pki                        pkiOptions
}

func parseControllerFlags(args []string, stderr io.Writer) (*controllerOptions, error) {
	o := &controllerOptions{}
	fs := cmdline.NewFlagSet("mcs controller", "Usage: mcs controller [flags]\n\nRenders every MachineConfigPool and writes its rendered MachineConfig at the lowest spec,\nleader-elected on a Lease; replaces OpenShift's render controller (which must not run beside it).\nEvery flag can also be set as MCS_<FLAG>.\n", stderr)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster, then $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&o.controllerConfig, "controller-config", kube.DefaultControllerConfig, "the ControllerConfig to render with")
	cmdline.SpecFlags(fs, &o.render, "lowest spec `VERSION` to render at (the servers' must be the same)",
		"highest spec `VERSION` to write: the newest spec the release rolled back to reads; a pool needing more is RenderDegraded",
		"write exactly this spec `VERSION` (3.5.0 is OpenShift's behaviour)")
	o.log.define(fs)
	fs.StringVar(&o.listen, "listen", ":22625", "address of /status, /metrics, /healthz and /readyz")
	// Defaults read from the environment are filled in after parsing, so
	// the help states each once, the same wherever it runs.
	fs.StringVar(&o.identity, "identity", "", "this replica's name in the Lease (default: $POD_NAME, else the host name and a random suffix)")
	fs.StringVar(&o.leaseNamespace, "lease-namespace", "", "namespace of the Lease (default: $POD_NAMESPACE, else mcs)")
	fs.StringVar(&o.leaseName, "lease-name", "mcs-controller", "name of the Lease that elects the one writer")
	fs.DurationVar(&o.leaseDuration, "lease-duration", 15*time.Second, "how long a standby waits after the leader's last renewal before taking over")
	fs.DurationVar(&o.renewWithin, "renew-deadline", 10*time.Second, "how long the leader tries to renew before it stops writing")
	fs.DurationVar(&o.retryPeriod, "retry-period", 2*time.Second, "how often the Lease is tried")
	fs.BoolVar(&o.dryRun, "dry-run", false, "write nothing: send every write with dryRun=All and report it (log, /status); no leader election, so no Lease and no namespace needed")
	fs.BoolVar(&o.prune, "prune", false, "delete rendered configs no pool or node uses, beyond the --keep newest per pool")
	fs.IntVar(&o.keep, "keep", controller.DefaultKeep, "rendered configs per pool kept beyond those in use when pruning")
	fs.DurationVar(&o.resync, "resync", 10*time.Minute, "re-render this often even without a change")
	fs.DurationVar(&o.debounce, "debounce", 20*time.Millisecond, "quiet time after a change before writing (the render starts at once; a change within it renders again)")
	fs.IntVar(&o.workers, "workers", 16, "pools written at once")
	fs.DurationVar(&o.pruneGrace, "prune-grace", 10*time.Minute, "with --prune, never delete a rendered config a pool named (or that was created) less than this ago")
	fs.Float64Var(&o.kubeQPS, "kube-api-qps", 100, "requests per second to the API server, sustained (client-go's default, 5, makes a 20-pool edit take seconds)")
	fs.IntVar(&o.kubeBurst, "kube-api-burst", 300, "requests to the API server in a burst: a worker edit writes about 2 per pool")
	fs.BoolVar(&o.pki.manage, "manage-pki", false, "also keep the machine-config-server CA, bundle, serving certificate, user-data pointer configs and pool tokens (docs/pki.md)")
	pkiFlags(fs, &o.pki)
	if err := cmdline.Parse(fs, args); err != nil {
		return nil, err
	}
	switch {
	case o.kubeQPS <= 0 || o.kubeBurst <= 0:
		return nil, cmdline.Mistake(fs, fmt.Errorf("--kube-api-qps and --kube-api-burst: want a positive number (got %v and %d)", o.kubeQPS, o.kubeBurst))
	case o.workers < 1:
		return nil, cmdline.Mistake(fs, fmt.Errorf("--workers: want 1 or more (got %d)", o.workers))
	case o.keep < 0:
		return nil, cmdline.Mistake(fs, fmt.Errorf("--keep: want 0 or more (got %d)", o.keep))
	case o.dryRun && o.pki.manage:
		return nil, cmdline.Mistake(fs, errors.New("--manage-pki writes the CA and certificates: not with --dry-run (mcs pki status says what it would change)"))
	}
	if o.identity == "" {
		o.identity = os.Getenv("POD_NAME")
	}
	if o.leaseNamespace == "" {
		o.leaseNamespace = cmp.Or(os.Getenv("POD_NAMESPACE"), "mcs")
	}
	return o, nil
}

// runController is `mcs controller`: the controller, and its status
// endpoints, until ctx ends; then it gives the Lease up.
func runController(ctx context.Context, o *controllerOptions, cmd *daemon.Command, stdout io.Writer) error {
	rc, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = float32(o.kubeQPS), o.kubeBurst
	if o.dryRun {
		fmt.Fprintln(stdout, "mcs controller: dry run: every write is sent with dryRun=All and stored nowhere; no leader election (no Lease): it renders beside the elected controller")
		if err := probeController(ctx, rc); err != nil {
			return err
		}
	}
	c, err := controller.New(controller.Config{
		REST: rc, Options: o.render, ControllerConfig: o.controllerConfig,
		Identity: o.identity, LeaseNamespace: o.leaseNamespace, LeaseName: o.leaseName,
		LeaseDuration: o.leaseDuration, RenewDeadline: o.renewWithin, RetryPeriod: o.retryPeriod,
		ReleaseOnCancel: true, DryRun: o.dryRun, Prune: o.prune, Keep: o.keep,
		Resync: o.resync, Debounce: o.debounce, Workers: o.workers, PruneGrace: o.pruneGrace, Logger: cmd.Log, Registerer: cmd.Registry,
	})
	if err != nil {
		return err
	}
	stopPKI, err := startPKI(ctx, o.pki, rc, cmd.Log, cmd.Registry)
	if err != nil {
		return err
	}
	defer stopPKI()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	cmd.Serve(ln, c.Handler(cmd.Registry))
	fmt.Fprintf(stdout, "mcs controller: listening on http://%s (/status, /metrics, /healthz, /readyz)\n", ln.Addr())
	return c.Run(ctx)
}

// probeController reads what every render reads once, and says what to do
// when it cannot: run from a workstation, a dry run meets the wrong
// cluster or too few rights before any cache retries.
func probeController(ctx context.Context, rc *rest.Config) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := controller.Probe(ctx, rc)
	var re *controller.ReadError
	if !errors.As(err, &re) {
		return err
	}
	what := re.Resource.Resource + "." + re.Resource.Group
	switch {
	case apierrors.IsNotFound(re.Err):
		return fmt.Errorf("%w: the API server at %s serves no %s: is the kubeconfig's context an OpenShift cluster (--kubeconfig, $KUBECONFIG)?", err, rc.Host, what)
	case apierrors.IsForbidden(re.Err):
		return fmt.Errorf("%w: a dry run needs the rights of deploy/controller/controller.yaml's ClusterRole (its reads, and its writes, which the API server authorises under dryRun=All too): log in as a user who has them, or bind that role", err)
	case apierrors.IsUnauthorized(re.Err):
		return fmt.Errorf("%w: the API server at %s refused the kubeconfig's credentials (expired? log in again)", err, rc.Host)
	}
	return fmt.Errorf("%w: is the API server at %s reachable from here (the kubeconfig's context, a VPN, a proxy)?", err, rc.Host)
}

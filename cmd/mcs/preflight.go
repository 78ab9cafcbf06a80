package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ignition-mcs/mcs/preflight"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

// errBlocked is a preflight that found what would stop the cutover.
var errBlocked = preflight.ErrBlocked

// runPreflight is mcs preflight: before anything changes, it reads the
// cluster as mcs start would and reports, pool by pool, what OpenShift's
// server serves beside what mcs would, image-mode pools, and the objects
// and permissions missing; it fails (exit 1) when a blocker is found.
func runPreflight(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cmdline.NewFlagSet("mcs preflight", "Usage: mcs preflight [--kubeconfig FILE] [--service-account NS/NAME]\n\nReads a cluster, changing nothing, and reports what mcs start needs and would serve.\nExits 1 when a blocker is found.\n", stderr)
	connect := kubeconfigFlag(fs)
	sa := fs.String("service-account", "", "check the permissions of this ServiceAccount (NAMESPACE/NAME, e.g. openshift-machine-config-operator/mcs-server) instead of the kubeconfig's own identity; needs the right to create SubjectAccessReviews")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the cluster's objects")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	api, err := connect()
	if err != nil {
		return err
	}
	cfg := preflight.Config{REST: api.REST, Kube: api.Kube, SyncWait: *timeout}
	if *sa != "" {
		ns, name, ok := strings.Cut(*sa, "/")
		if !ok || ns == "" || name == "" {
			return cmdline.Mistake(fs, fmt.Errorf("--service-account: invalid value %q: want NAMESPACE/NAME", *sa))
		}
		cfg.User = "system:serviceaccount:" + ns + ":" + name
	}
	return preflight.Run(ctx, cfg, stdout)
}

package main

import (
	"context"
	"io"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/ignition-mcs/mcs/controller"
	"github.com/ignition-mcs/mcs/source/kube"

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
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default: in-cluster, then $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&o.Pool, "pool-name", "", "only this pool's rendered configs (in use is judged over every pool and node)")
	fs.IntVar(&o.Keep, "keep", controller.DefaultKeep, "beyond those in use, keep the newest N per pool (0: oc's default, delete all not in use)")
	fs.IntVar(&o.Count, "count", 0, "delete at most the N oldest prunable configs (0: all)")
	fs.BoolVar(&o.Confirm, "confirm", false, "delete; without it, a dry run says what would be deleted")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	rc, err := kube.RESTConfig(*kubeconfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	meta, err := metadata.NewForConfig(rc)
	if err != nil {
		return err
	}
	_, err = controller.Prune(ctx, dyn, meta, o, stdout)
	return err
}

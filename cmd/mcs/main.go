// Command mcs serves booting nodes their Ignition config, negotiated per client, from a directory of MachineConfigs.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
	"github.com/ignition-mcs/mcs/internal/buildinfo"
	"github.com/ignition-mcs/mcs/internal/daemon"
	"github.com/ignition-mcs/mcs/internal/gctune"
	"github.com/ignition-mcs/mcs/internal/klogbridge"
	"github.com/ignition-mcs/mcs/internal/text"
)

// gcPolicyFor is the GC target of the command args run (see gctune).
func gcPolicyFor(args []string) gctune.Policy {
	if len(args) > 0 && args[0] == "controller" {
		return gctune.Controller
	}
	return gctune.Server
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if os.Getenv("GOGC") == "" {
		go gctune.Run(ctx, gcPolicyFor(os.Args[1:]), time.Second, gctune.Process())
	}
	ctx = klogbridge.Install(ctx, slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{ReplaceAttr: daemon.BoundAttr}))
	if err := dispatch(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		if !cmdline.Said(err) {
			fmt.Fprintln(os.Stderr, "mcs:", err)
		}
		os.Exit(cmdline.Code(err))
	}
}

// command is one of mcs's subcommands, named first; without one, mcs is
// the server.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

// commands lists the subcommands: mcs --help lists them from here, and
// TestFlagsWalk walks each (a summary starting "verb|verb:" walks each
// verb).
func commands() []command {
	return []command{
		{"controller", "render every pool into the cluster's rendered MachineConfigs, leader-elected", daemonCommand(parseControllerFlags, func(o *controllerOptions) logOptions { return o.log }, runController)},
		{"prune", "list or delete rendered MachineConfigs no pool or node uses", noStdin(runPrune)},
		{"pki", "status|rotate: the machine-config-server CA, certificate, pointer configs and tokens", noStdin(runPKI)},
		{"start", "OpenShift's machine-config-server start, as its DaemonSet runs it", server(parseStartFlags)},
		{"bootstrap", "OpenShift's machine-config-server bootstrap, as the installer's bootstrap node runs it", server(parseBootstrapFlags)},
		{"preflight", "read a cluster, changing nothing, and report what mcs start needs and would serve", noStdin(runPreflight)},
		{"cutover", "plan|apply|back: OpenShift's machine-config-server DaemonSet to mcs start and back", noStdin(runCutover)},
		{"admit", "mutating admission webhook: every MachineConfig stored at the lowest spec", runAdmit},
	}
}

func noStdin(run func(context.Context, []string, io.Writer, io.Writer) error) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return run(ctx, args, stdout, stderr)
	}
}

// commandList is the commands, one a line, for the usage text.
func commandList() string {
	var b strings.Builder
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-12s %s\n", c.name, c.summary)
	}
	return b.String()
}

// dispatch runs the subcommand named first, else the server; --version,
// which every command takes, prints the build on stdout.
func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	run := run
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		var names []string
		for _, c := range commands() {
			names = append(names, c.name)
		}
		i := slices.Index(names, args[0])
		if i < 0 {
			meant := ""
			if m := text.Closest(args[0], names); m != "" {
				meant = " (did you mean " + m + "?)"
			}
			fmt.Fprintf(stderr, "mcs: unknown command %q%s: want one of %s, or flags only (the server)\nRun 'mcs --help' for usage.\n", args[0], meant, strings.Join(names, ", "))
			return cmdline.ErrUsage
		}
		run, args = commands()[i].run, args[1:]
	}
	err := run(ctx, args, stdin, stdout, stderr)
	if errors.Is(err, cmdline.ErrVersion) {
		_, err = fmt.Fprintf(stdout, "mcs %s\n", buildinfo.String())
	}
	return err
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/impact"
	"github.com/ignition-mcs/mcs/render"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

const diffUsageText = `Usage: render diff [flags] OLD NEW

Diff renders two trees (each as render reads a PATH: a change's base and
head) and says, pool by pool, what the change does: pools added and removed,
the rendered name old → new, the spec old → new with the fields that force
it and the MachineConfig (file and line) each came from, what was added,
removed or changed (files, directories, links, units and dropins, users,
groups, storage, kernel arguments, extensions, kernelType, fips, OS images;
contents only as size and SHA-256, never themselves), and, for each
Ignition era (the spec each Ignition release line reads, and spec 2), what
mcs would answer its nodes before and after: a config, or the skew stub
(newly refused, newly admitted).

Pools render without a ceiling so the whole change shows; --max-spec is
the ceiling the "ceiling" condition tests.

Flags:
%s
Exit status: 0 compared (with or without changes), 1 invalid input, 2 usage
error, 4 a --fail-on condition holds.

Examples:
  render diff base/cluster head/cluster
  render diff --output github --fail-on spec-raise,era-loss base/cluster head/cluster
  render diff --output json --pool worker base/cluster head/cluster | jq .pools
`

type diffOptions struct {
	pools   stringList
	output  string
	failOn  string
	render  render.Options // --min-spec, --max-spec
	server  serverFlags
	version bool
}

func runDiff(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var d diffOptions
	fs := flag.NewFlagSet("render diff", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&d.pools, "pool", "compare only this `POOL` (repeat, or separate with commas)")
	cmdline.Choice(fs, &d.output, "output", "text", "output: text (for people), json (docs/render-diff.schema.json) or github (workflow commands)", "text", "json", "github")
	fs.BoolVar(&d.version, "version", false, "print the version and exit")
	fs.StringVar(&d.failOn, "fail-on", "", "exit with status 4 when one of these `CONDITIONS` holds: "+strings.Join(impact.Conditions, ","))
	cmdline.SpecBounds(fs, &d.render, "lowest spec `VERSION` to write, as mcs --min-spec", "the ceiling: the newest spec `VERSION` the booting nodes read")
	d.server.register(fs)

	paths, err := cmdline.ParseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		_, err := io.WriteString(stdout, fmt.Sprintf(diffUsageText, flagDefaults(fs)))
		return err
	}
	if err == nil && d.version {
		return printVersion(stdout)
	}
	var failOn []string
	var opts render.Options
	if err == nil {
		failOn, opts, err = d.check(paths)
	}
	if err != nil {
		fmt.Fprintf(stderr, "render diff: %v\nRun 'render diff --help' for usage.\n", err)
		return fail(exitUsage, err)
	}
	var sets [2]*render.Set
	for i, p := range paths {
		if sets[i], err = loadSide(p, stdin, stderr); err != nil {
			return d.annotate(stdout, err)
		}
	}
	if err := d.checkPools(sets); err != nil {
		fmt.Fprintf(stderr, "render diff: %v\nRun 'render diff --help' for usage.\n", err)
		return fail(exitUsage, err)
	}
	var sides [2]*impact.Tree
	for i, p := range paths {
		if sides[i], err = d.side(p, sets[i], opts, stderr); err != nil {
			return d.annotate(stdout, err)
		}
	}
	rep := impact.Compare(ctx, sides[0], sides[1], impact.Options{Ceiling: opts.MaxSpec})
	switch d.output {
	case "json":
		err = impact.WriteJSON(stdout, rep)
	case "github":
		err = impact.WriteGitHub(stdout, rep, failOn)
	default:
		err = impact.WriteText(stdout, rep, failOn)
	}
	if err != nil {
		return fail(exitInvalid, err)
	}
	if failing := rep.Failing(failOn); len(failing) > 0 {
		err := fmt.Errorf("--fail-on: %s holds", strings.Join(failing, ", "))
		fmt.Fprintf(stderr, "render diff: %v\n", err)
		return fail(exitFailOn, err)
	}
	return nil
}

// annotate writes, with --output github, a tree's problems as error
// annotations on their lines too (stderr has them for people); err, the
// exit status, is returned.
func (d *diffOptions) annotate(stdout io.Writer, err error) error {
	if d.output == "github" {
		if werr := impact.WriteGitHubErrors(stdout, err); werr != nil {
			return werr
		}
	}
	return err
}

// check validates the arguments; the options render every pool uncapped.
func (d *diffOptions) check(paths []string) ([]string, render.Options, error) {
	var opts render.Options
	if len(paths) != 2 {
		return nil, opts, fmt.Errorf("want two trees, OLD and NEW; got %d", len(paths))
	}
	if paths[0] == "-" && paths[1] == "-" {
		return nil, opts, errors.New("only one tree can be read from stdin")
	}
	failOn, err := impact.ParseFailOn(d.failOn)
	if err != nil {
		return nil, opts, fmt.Errorf("--fail-on: %w", err)
	}
	opts = d.render
	if err := checkBounds(opts); err != nil {
		return nil, opts, err
	}
	if _, err := d.server.check(); err != nil {
		return nil, opts, err
	}
	return failOn, opts, nil
}

// loadSide loads one tree and prints its notices.
func loadSide(path string, stdin io.Reader, stderr io.Writer) (*render.Set, error) {
	set, err := load([]string{path}, stdin)
	if err != nil {
		printErr(stderr, err)
		return nil, fail(exitInvalid, err)
	}
	for _, n := range set.Notices() {
		fmt.Fprintln(stderr, n)
	}
	return set, nil
}

// checkPools refuses a --pool neither tree has: a typo would otherwise
// compare nothing and pass every --fail-on condition.
func (d *diffOptions) checkPools(sets [2]*render.Set) error {
	var names []string
	for _, s := range sets {
		for _, n := range s.PoolNames() {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	for _, p := range d.pools {
		if !slices.Contains(names, p) {
			return fmt.Errorf("--pool: %s", render.UnknownPool(p, names, false))
		}
	}
	return nil
}

// side renders one tree, every pool (or --pool) without a ceiling, and
// builds the server that would serve it.
func (d *diffOptions) side(path string, set *render.Set, opts render.Options, stderr io.Writer) (*impact.Tree, error) {
	uncapped := opts
	uncapped.MaxSpec = convert.Newest
	all, errs := set.Render(uncapped)
	if errs != nil {
		printErr(stderr, errs)
		return nil, fail(exitCode(errs), errs)
	}
	var results []*render.Result
	for _, r := range all {
		if len(d.pools) == 0 || slices.Contains(d.pools, r.Pool) {
			results = append(results, r)
		}
	}
	srv, err := d.server.server(set, results)
	if err != nil {
		fmt.Fprintf(stderr, "render diff: %s: %v\n", path, err)
		return nil, fail(exitInvalid, err)
	}
	pools := make([]*render.MachineConfigPool, 0, len(results))
	for _, r := range results {
		pools = append(pools, set.Pool(r.Pool))
	}
	return &impact.Tree{Path: path, Results: results, MachineConfigs: set.MachineConfigs(), Pools: pools, Server: srv}, nil
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/impact"
	"github.com/ignition-mcs/mcs/internal/buildinfo"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/tree"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

// Exit codes, for CI pipelines: mcs's (cmdline), and render's own.
const (
	exitOK      = cmdline.ExitOK
	exitInvalid = cmdline.ExitFailed // the input is invalid, or could not be read or written
	exitUsage   = cmdline.ExitUsage
	exitCeiling = 3 // the content needs a newer spec than --max-spec or --spec allow
	exitFailOn  = 4 // a --fail-on condition holds
)

// fail ends run with code; its problems are already on stderr.
func fail(code int, err error) error { return cmdline.Fail(code, err) }

const usageText = `Usage: render [flags] PATH...
       render diff [flags] OLD NEW   (see 'render diff --help')
       render lower [--max-spec V] [--check] PATH...   (see 'render lower --help')

Render merges the MachineConfigs found in PATH (files or directory trees of
.yaml, .yml, .json and openshift-variant .bu files; "-" reads stdin) into one
rendered MachineConfig per MachineConfigPool, exactly as OpenShift's
renderer merges and names them, and writes each pool's Ignition config at
the lowest spec that can express it, so older boot images can read it.

Output goes to stdout (or -o): with one --pool, its rendered MachineConfig;
otherwise a List of them, however many pools the tree has. Problems go to
stderr, one per line, as "file[:line]: object: $.json.path: message"; so do
notices, such as a file or unit one MachineConfig replaces of another's (the
later in merge order wins). A field a MachineConfig or MachineConfigPool
does not have (a typo such as spec.kernelArgs) is an error, never dropped. A tree without
MachineConfigPools gets the default pools master and worker, each only when
a MachineConfig has its role label. A rendered MachineConfig over 1.5 MiB
(what etcd stores in one object; OpenShift's limit) fails, naming the
MachineConfigs whose contents are largest.

Flags:
%s
With --client UA, render prints instead what mcs would answer that client
for the pool (--pool), byte for byte: the config at the spec negotiated from
--accept (default: the header that Ignition release sends), or the skew stub
that tells the node why it cannot join. --skew-policy, --default-spec,
--bootstrap-kubeconfig and --kubelet-ca are mcs's flags of the same names.

Exit status:
  0  rendered (with --client: mcs answers 200, a config or the stub)
  1  invalid input, or a file could not be read or written
  2  usage error (an unknown flag or pool)
  3  a pool needs a newer spec than --max-spec (or --spec) allows; with
     --client, mcs answers 406 (the client reads no spec it writes)
  4  a --fail-on condition holds (render diff; with --client, era-loss:
     the client gets the skew stub)

Examples:
  # Every pool, as a List of rendered MachineConfigs:
  render fixtures/cluster

  # The worker pool's Ignition config, for a node that runs Ignition v2.15:
  render --pool worker --format ignition --max-spec 3.4.0 fixtures/cluster | jq .

  # OpenShift's own rendered name (it writes spec 3.5.0):
  render --spec 3.5.0 --pool master ../shared/realdata/aws | jq -r .metadata.name

  # Why each pool got its spec, and which MachineConfig supplied what:
  render --explain fixtures/features/luks-3.2

  # One file per pool, written atomically, for CI artifacts:
  render -o out/ --pretty fixtures/cluster

  # What a node running Ignition v2.9.0 (spec 3.2) would receive:
  render --client Ignition/v2.9.0 --pool worker fixtures/features/tang-advertisement-3.4

  # What a change does to each pool and each Ignition era:
  render diff base/cluster head/cluster
`

type options struct {
	pools   stringList
	out     string
	format  string
	pretty  bool
	explain bool
	render  render.Options // --min-spec, --max-spec, --spec
	version bool

	client     string
	accept     string
	failOnList string
	failOn     []string
	server     serverFlags
}

type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*s = append(*s, x)
		}
	}
	return nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "diff" {
		return runDiff(ctx, args[1:], stdin, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "lower" {
		return runLower(ctx, args[1:], stdin, stdout, stderr)
	}
	var o options
	fs := o.flagSet()
	usage := func() string { return fmt.Sprintf(usageText, flagDefaults(fs)) }

	paths, err := cmdline.ParseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		_, err := io.WriteString(stdout, usage())
		return err
	}
	if err != nil {
		fmt.Fprintf(stderr, "render: %v\nRun 'render --help' for usage.\n", err)
		return fail(exitUsage, err)
	}
	if o.version {
		return printVersion(stdout)
	}
	opts, err := o.check(fs, paths)
	if err != nil {
		fmt.Fprintf(stderr, "render: %v\nRun 'render --help' for usage.\n", err)
		return fail(exitUsage, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(exitInvalid, err)
	}

	set, results, err := loadAndRender(o, paths, opts, stdin, stdout, stderr)
	if err != nil {
		return err
	}

	if o.client != "" {
		return answerClient(ctx, o, set, results, stdout, stderr)
	}
	if o.explain {
		for _, r := range results {
			if err := r.Explain(stdout); err != nil {
				return fail(exitInvalid, err)
			}
		}
		if o.out == "" {
			return nil
		}
	}
	if err := write(o, results, stdout); err != nil {
		fmt.Fprintf(stderr, "render: %v\n", err)
		var ue *usageError
		if errors.As(err, &ue) {
			return fail(exitUsage, err)
		}
		return fail(exitInvalid, err)
	}
	return nil
}

// loadAndRender loads the paths and renders the pools asked for, telling
// stderr what a person should know: problems, notices, warnings and what
// one MachineConfig overrode of another's.
func loadAndRender(o options, paths []string, opts render.Options, stdin io.Reader, stdout, stderr io.Writer) (*render.Set, []*render.Result, error) {
	set, err := load(paths, stdin)
	if err != nil {
		printErr(stderr, err)
		return nil, nil, fail(exitInvalid, err)
	}
	for _, n := range set.Notices() {
		fmt.Fprintln(stderr, n)
	}
	if err := render.NothingToRender(set, strings.Join(paths, " ")); err != nil {
		fmt.Fprintf(stderr, "render: %v\n", err)
		return nil, nil, fail(exitInvalid, err)
	}
	results, err := renderPools(set, o.pools, opts)
	if err != nil {
		printErr(stderr, err)
		if o.explain {
			render.ExplainFailure(stdout, err)
		}
		return nil, nil, fail(exitCode(err), err)
	}
	for _, r := range results {
		for _, w := range r.Warnings {
			fmt.Fprintln(stderr, w)
		}
		for _, x := range r.Overrides {
			fmt.Fprintf(stderr, "notice: pool %s: %s\n", r.Pool, x)
		}
	}
	return set, results, nil
}

// printVersion is render --version (and render diff --version).
func printVersion(stdout io.Writer) error {
	_, err := fmt.Fprintf(stdout, "render (mcs) %s\nwrites Ignition specs %s\n", buildinfo.String(), convert.VersionList(convert.OutputVersions))
	return err
}

// flagSet registers the flags into o.
func (o *options) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&o.pools, "pool", "render only this `POOL` (repeat, or separate with commas)")
	fs.StringVar(&o.out, "o", "", "write to `FILE`, or to DIR/<pool>.json (.ign) when the path ends in / or is a directory")
	cmdline.Choice(fs, &o.format, "format", "machineconfig", "output: machineconfig (the rendered MachineConfig) or ignition (its Ignition config)", "machineconfig", "ignition")
	fs.BoolVar(&o.pretty, "pretty", false, "indent the JSON output")
	fs.BoolVar(&o.explain, "explain", false, "print the chosen spec and why, field by field, with the MachineConfig behind each file, unit, user and kernel argument")
	cmdline.SpecBounds(fs, &o.render, "lowest spec `VERSION` to write", "newest spec `VERSION` the booting nodes read; content needing more fails with exit status 3")
	fs.Var(cmdline.Version(&o.render.Spec), "spec", "write exactly this spec `VERSION` (3.5.0 reproduces OpenShift's names)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.StringVar(&o.client, "client", "", "print what mcs answers a client with this User-`AGENT` (Ignition/v2.9.0) for the pool")
	fs.StringVar(&o.accept, "accept", "", "with --client: the Accept `HEADER` it sends (default: the one that Ignition release sends)")
	fs.StringVar(&o.failOnList, "fail-on", "", "with --client: `CONDITION` era-loss exits with status 4 when the client gets the skew stub")
	o.server.register(fs)
	return fs
}

// flagDefaults is the flags' help, for a usage text.
func flagDefaults(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return b.String()
}

// check validates the arguments and returns the render's options.
func (o *options) check(fs *flag.FlagSet, paths []string) (render.Options, error) {
	opts, err := o.renderOptions(fs)
	if err == nil {
		err = o.checkClient()
	}
	if err == nil && o.explain && o.out == "" && (o.pretty || o.format != "machineconfig") {
		// The explanation takes stdout; the output they shape is written
		// only with -o.
		err = errors.New("--explain prints the explanation instead of the output: --format and --pretty shape the output, written with -o FILE beside it")
	}
	if err == nil && len(paths) == 0 {
		err = errors.New("no PATH given")
	}
	return opts, err
}

// checkClient validates --client, --accept and --fail-on.
func (o *options) checkClient() error {
	failOn := o.failOnList
	if o.client == "" {
		if o.accept != "" || failOn != "" {
			return errors.New("--accept and --fail-on go with --client (or render diff)")
		}
		return nil
	}
	if o.explain || o.pretty {
		return errors.New("--client prints what the client receives, as it is: it cannot be combined with --explain or --pretty")
	}
	var err error
	if o.failOn, err = impact.ParseFailOn(failOn); err != nil {
		return fmt.Errorf("--fail-on: %w", err)
	}
	for _, c := range o.failOn {
		if c != "era-loss" {
			return fmt.Errorf("--fail-on %s is for render diff; with --client only era-loss applies", c)
		}
	}
	_, err = o.server.check()
	return err
}

func (o *options) renderOptions(fs *flag.FlagSet) (render.Options, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !o.render.Spec.IsZero() {
		if set["min-spec"] || set["max-spec"] {
			return render.Options{}, errors.New("--spec forces one spec: it cannot be combined with --min-spec or --max-spec")
		}
		return render.Options{Spec: o.render.Spec}, nil
	}
	return o.render, checkBounds(o.render)
}

// checkBounds refuses crossed bounds as a usage error, before any render.
func checkBounds(ro render.Options) error {
	if !ro.MaxSpec.IsZero() && ro.MaxSpec.Less(ro.MinSpec) {
		return fmt.Errorf("--max-spec %s is below --min-spec %s", ro.MaxSpec, ro.MinSpec)
	}
	return nil
}

func load(paths []string, stdin io.Reader) (*render.Set, error) {
	var l tree.Loader
	for _, p := range paths {
		if p != "-" {
			l.Path(p)
			continue
		}
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
		l.Data("<stdin>", data)
	}
	return l.Set()
}

func renderPools(set *render.Set, pools []string, opts render.Options) ([]*render.Result, error) {
	if len(pools) == 0 {
		results, errs := set.Render(opts)
		if errs != nil {
			return nil, errs
		}
		return results, nil
	}
	var out []*render.Result
	var errs render.Errors
	for _, p := range pools {
		r, err := set.RenderPool(p, opts)
		if err != nil {
			var es *render.Errors
			if errors.As(err, &es) {
				errs.List = append(errs.List, es.List...)
			} else {
				errs.List = append(errs.List, &render.Error{Message: err.Error(), Err: err})
			}
			continue
		}
		out = append(out, r)
	}
	if len(errs.List) > 0 {
		return nil, &errs
	}
	return out, nil
}

// exitCode ranks failures: invalid input first, then a usage mistake (an
// unknown pool), then a spec ceiling alone.
func exitCode(err error) int {
	var es *render.Errors
	if !errors.As(err, &es) {
		return exitInvalid
	}
	code := exitOK
	for _, e := range es.List {
		c := exitInvalid
		switch {
		case errors.Is(e, render.ErrSpecCeiling):
			c = exitCeiling
		case errors.Is(e, render.ErrUnknownPool):
			c = exitUsage
		}
		if code == exitOK || c == exitInvalid || c == exitUsage && code == exitCeiling {
			code = c
		}
	}
	if code == exitOK {
		code = exitInvalid
	}
	return code
}

// printErr prints one problem per line.
func printErr(w io.Writer, err error) {
	var es *render.Errors
	if errors.As(err, &es) {
		for _, e := range es.List {
			fmt.Fprintln(w, e)
		}
		return
	}
	fmt.Fprintf(w, "render: %v\n", err)
}

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// write puts the results on stdout, in a file, or one file per pool in a
// directory. Files are written whole or not at all.
func write(o options, results []*render.Result, stdout io.Writer) error {
	toDir := false
	if o.out != "" {
		if strings.HasSuffix(o.out, "/") || strings.HasSuffix(o.out, string(filepath.Separator)) {
			toDir = true
		} else if info, err := os.Stat(o.out); err == nil && info.IsDir() {
			toDir = true
		}
	}
	if toDir {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		ext := ".json"
		if o.format == "ignition" {
			ext = ".ign"
		}
		files := map[string][]byte{}
		for _, r := range results {
			b, err := encode(o, []*render.Result{r}, true)
			if err != nil {
				return err
			}
			files[filepath.Join(o.out, r.Pool+ext)] = b
		}
		names := make([]string, 0, len(files))
		for n := range files {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			if err := writeAtomic(n, files[n]); err != nil {
				return err
			}
		}
		return nil
	}
	if o.format == "ignition" && len(results) > 1 {
		return &usageError{"--format ignition writes one pool's config: choose it with --pool, or write one file per pool with -o DIR/"}
	}
	b, err := encode(o, results, len(o.pools) == 1)
	if err != nil {
		return err
	}
	if o.out != "" {
		return writeAtomic(o.out, b)
	}
	_, err = stdout.Write(b)
	return err
}

// encode writes one result as its MachineConfig or its Ignition config, or
// any number as a List of MachineConfigs: single says the command line
// named one pool (one --pool, or a file per pool), so the shape follows
// what was asked, never how many pools a tree has. Output ends with a
// newline.
func encode(o options, results []*render.Result, single bool) ([]byte, error) {
	var b []byte
	var err error
	switch {
	case o.format == "ignition":
		b = results[0].MachineConfig.Spec.Config
	case single:
		b, err = json.Marshal(results[0].MachineConfig)
	default:
		items := make([]*render.MachineConfig, len(results))
		for i, r := range results {
			items[i] = r.MachineConfig
		}
		b, err = json.Marshal(struct {
			APIVersion string                  `json:"apiVersion"`
			Kind       string                  `json:"kind"`
			Items      []*render.MachineConfig `json:"items"`
		}{"v1", "List", items})
	}
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if o.pretty {
		// Indenting compact JSON gives what MarshalIndent would.
		if err := json.Indent(&buf, b, "", "  "); err != nil {
			return nil, err
		}
	} else {
		buf.Write(b)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// writeAtomic writes a file so readers see the old contents or the new,
// never a part: a temporary file beside it, synced, then renamed over it.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // fails harmlessly once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/text"
	"github.com/ignition-mcs/mcs/manifest"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/tree"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

// exitWouldLower is render lower --check's: a MachineConfig is not stored
// as written.
const exitWouldLower = 4

const lowerUsageText = `Usage: render lower [--max-spec V] [--check] PATH...

Lower rewrites the MachineConfigs in PATH in place, each spec.config at the
lowest Ignition spec able to express it: the spec the admission webhook
(mcs admit) stores it at, by the same conversion, so that Git holds what
the cluster stores and Argo CD or Flux see no drift. PATH is a file or a
directory tree, read as render reads one (.yaml, .yml and .json files,
hidden entries skipped); "-" reads stdin and writes the result to stdout.
Multi-document files, Lists and JSON arrays are rewritten object by object.

Only the bytes the lowering changes are rewritten: ignition.version's value,
in the quotes it had; where the lower spec lacks a key the input wrote
empty, that key too. Comments, key order, quoting and layout are kept.
Only where neither reads, by Ignition's own parser, as the lowered config
is spec.config written whole, its comments, key order and styles carried
over, with a notice. Each file is read back and checked before it is
replaced.

Butane (.bu) files and other kinds are read for mistakes, not rewritten.
A config the webhook stores as written (spec 2, one OpenShift's operator
refuses, one with no provably lossless lower spec) is left so, with a
notice. Problems are printed as "file:line:column: object: $.json.path:
message".

Flags:
%s
Exit status:
  0  every MachineConfig is at its lowest spec (with --check), or was lowered
  1  invalid input, or a file could not be read or written
  2  usage error
  3  a MachineConfig needs a spec above --max-spec (files are still lowered)
  4  with --check: a MachineConfig is not at its lowest spec

Examples:
  # Lower every MachineConfig of a GitOps repository's tree:
  render lower clusters/prod/machineconfigs

  # In CI: fail when a MachineConfig is not stored as written:
  render lower --check --max-spec 3.4.0 clusters/
`

type lowerOptions struct {
	check   bool
	maxSpec convert.Version
	version bool
}

// lowerRun is one run's tally and where it reports.
type lowerRun struct {
	lowerOptions
	out, errw      io.Writer
	files, objects int // rewritten (or, with --check, to rewrite)
	code           int
}

func runLower(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var o lowerOptions
	fs := flag.NewFlagSet("render lower", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&o.check, "check", false, "change nothing: name each MachineConfig not at its lowest spec and exit with status 4")
	fs.Var(cmdline.Version(&o.maxSpec), "max-spec", "the ceiling: the newest spec `VERSION` the booting nodes read; a MachineConfig needing more exits with status 3")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	paths, err := cmdline.ParseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		_, err := io.WriteString(stdout, fmt.Sprintf(lowerUsageText, flagDefaults(fs)))
		return err
	}
	if err == nil && o.version {
		return printVersion(stdout)
	}
	if err == nil {
		err = checkLowerPaths(paths)
	}
	if err != nil {
		fmt.Fprintf(stderr, "render lower: %v\nRun 'render lower --help' for usage.\n", err)
		return fail(exitUsage, err)
	}
	var in []byte
	if strings.Contains(strings.Join(paths, "\x00")+"\x00", "-\x00") {
		if in, err = io.ReadAll(stdin); err != nil {
			fmt.Fprintf(stderr, "render lower: reading stdin: %v\n", err)
			return fail(exitInvalid, err)
		}
	}
	r := &lowerRun{lowerOptions: o, out: stdout, errw: stderr}
	if !o.check && len(in) > 0 {
		r.out = stderr // stdout carries the file
	}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return fail(exitInvalid, err)
		}
		r.path(p, in, stdout)
	}
	return r.finish()
}

// checkLowerPaths refuses no PATH, and stdin named twice.
func checkLowerPaths(paths []string) error {
	n := 0
	for _, p := range paths {
		if p == "-" {
			n++
		}
	}
	switch {
	case len(paths) == 0:
		return errors.New("no PATH given")
	case n > 1:
		return errors.New(`stdin ("-") can be read once`)
	}
	return nil
}

// mistakes reads one file as render does, printing what render refuses
// (a typo'd field, a YAML error) in render's words; false when it
// refuses something, and the file is then left as it is. Each file is read
// on its own: a repository's trees of several clusters may repeat names.
func (r *lowerRun) mistakes(name string, data []byte) bool {
	var l tree.Loader
	if data != nil {
		l.Data(name, data)
	} else {
		l.Path(name)
	}
	_, err := l.Set()
	var es *render.Errors
	switch {
	case errors.As(err, &es):
		for _, x := range es.List {
			r.problem(x)
		}
	case err != nil:
		r.problem(&render.Error{File: name, Message: err.Error(), Err: err})
	}
	return err == nil
}

// path lowers one PATH's files.
func (r *lowerRun) path(p string, in []byte, stdout io.Writer) {
	if p == "-" {
		res := in
		if r.mistakes("<stdin>", in) {
			res = r.file("<stdin>", in)
		}
		if !r.check {
			if _, err := stdout.Write(res); err != nil {
				r.problem(&render.Error{File: "<stdout>", Message: err.Error()})
			}
		}
		return
	}
	files, errs := tree.Files(p)
	for _, x := range errs {
		r.problem(x)
	}
	for _, f := range files {
		if !r.mistakes(f, nil) || strings.EqualFold(filepath.Ext(f), ".bu") {
			continue // a Butane source: its output is what is lowered
		}
		data, err := os.ReadFile(f)
		if err != nil {
			r.problem(&render.Error{File: f, Message: err.Error(), Err: err})
			continue
		}
		out := r.file(f, data)
		if r.check || string(out) == string(data) {
			continue
		}
		if err := writeInPlace(f, out); err != nil {
			r.problem(&render.Error{File: f, Message: "not rewritten: " + err.Error(), Err: err})
		}
	}
}

// file lowers one file's bytes, saying what it does, and returns them.
func (r *lowerRun) file(name string, data []byte) []byte {
	res, err := manifest.Lower(name, data, r.maxSpec)
	if err != nil {
		var es *render.Errors
		if errors.As(err, &es) {
			for _, x := range es.List {
				r.problem(x)
			}
		} else {
			r.problem(&render.Error{File: name, Message: err.Error(), Err: err})
		}
	}
	for _, o := range res.Objects {
		r.object(name, o)
		if o.Stored != o.Declared && o.Pass == nil {
			r.objects++
		}
	}
	if res.Changed() || r.check && hasLowerable(res.Objects) {
		r.files++
	}
	return res.Data
}

// object reports one MachineConfig.
func (r *lowerRun) object(file string, o manifest.Object) {
	at := fmt.Sprintf("%s:%d: %s", file, o.Line, o.Label)
	switch {
	case o.Pass != nil:
		fmt.Fprintf(r.errw, "%s: notice: spec.config %v\n", at, o.Pass)
	case o.Stored == o.Declared:
	case r.check:
		fmt.Fprintf(r.out, "%s: declares spec %s; the webhook stores it at spec %s\n", at, o.Declared, o.Stored)
	default:
		fmt.Fprintf(r.out, "%s: spec %s → %s%s\n", at, o.Declared, o.Stored, rewrote[o.Rewrote])
		if o.Rewrote == manifest.RewroteConfig {
			fmt.Fprintf(r.errw, "%s: notice: spec.config was written whole (no smaller edit reads as the lowered config): its comments, key order and styles were carried over where their keys remain; review its layout\n", at)
		}
	}
	r.above(file, o)
}

// rewrote notes what a lowering rewrote beside the version.
var rewrote = map[string]string{
	manifest.RewroteVersion: "",
	manifest.RewroteFields:  " (and deleted the keys it lacks, each empty)",
	manifest.RewroteConfig:  " (spec.config written whole)",
}

// hasLowerable says whether a MachineConfig is not at its lowest spec.
func hasLowerable(objs []manifest.Object) bool {
	for _, o := range objs {
		if o.Stored != o.Declared && o.Pass == nil {
			return true
		}
	}
	return false
}

// above warns of each field above --max-spec, as the webhook does, and
// says what to do.
func (r *lowerRun) above(file string, o manifest.Object) {
	if len(o.Above) == 0 {
		return
	}
	need := o.Needs
	for i, a := range o.Above {
		at := fmt.Sprintf("%s:%d: %s: $.spec.config%s", file, o.AboveLines[i], o.Label, strings.TrimPrefix(a.Path.String(), "$"))
		if need.Less(a.Version) {
			need = a.Version
		}
		if l, ok := lostAt(o.Lost, a.Path); ok {
			fmt.Fprintf(r.errw, "%s: %s: kept at Ignition spec %s, above --max-spec %s: stored at %s, %s would read it otherwise (%s)\n",
				at, a.What, a.Version, r.maxSpec, l.Stored, l.Reader.Who, l.Message)
			continue
		}
		fmt.Fprintf(r.errw, "%s: %s need%s Ignition spec %s; --max-spec %s reads only up to %s\n",
			at, a.What, text.VerbS(a.What), a.Version, r.maxSpec, r.maxSpec)
	}
	fmt.Fprintf(r.errw, "%s:%d: %s: needs spec %s, above --max-spec %s: nodes (and a rollback) reading only spec %s cannot apply it; "+
		"drop or rewrite the fields above, or raise --max-spec once every release you may roll back to reads spec %s\n",
		file, o.Line, o.Label, need, r.maxSpec, r.maxSpec, need)
	r.code = max(r.code, exitCeiling)
}

// lostAt is the first of lost at path p.
func lostAt(lost []convert.Loss, p convert.Path) (convert.Loss, bool) {
	for _, l := range lost {
		if l.Path.String() == p.String() {
			return l, true
		}
	}
	return convert.Loss{}, false
}

// problem prints one problem; the run then fails.
func (r *lowerRun) problem(x *render.Error) {
	fmt.Fprintln(r.errw, x)
	r.code = exitInvalid
}

// finish sums up and gives the exit status: invalid input first, then a
// ceiling, then --check's finding.
func (r *lowerRun) finish() error {
	if r.check && r.objects > 0 {
		fmt.Fprintf(r.errw, "render lower: %d MachineConfig%s in %d file%s not at the lowest spec: run render lower on them\n",
			r.objects, plural(r.objects), r.files, plural(r.files))
		if r.code == exitOK {
			r.code = exitWouldLower
		}
	}
	switch r.code {
	case exitOK:
		return nil
	case exitInvalid:
		return fail(exitInvalid, errors.New("render lower: invalid input"))
	case exitCeiling:
		return fail(exitCeiling, errors.New("render lower: above --max-spec"))
	}
	return fail(r.code, errors.New("render lower --check: not at the lowest spec"))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// writeInPlace replaces a file (what a symbolic link leads to, the link
// kept) so readers see the old contents or the new, never a part, its mode
// kept.
func writeInPlace(path string, data []byte) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	info, err := os.Stat(real)
	if err != nil {
		return err
	}
	st, _ := info.Sys().(*syscall.Stat_t)
	if st != nil && st.Nlink > 1 {
		// A new file renamed over it would split the links.
		return fmt.Errorf("%s has %d hard links: rewriting it would split them; lower a copy, or write it with - (stdin to stdout)", real, st.Nlink)
	}
	f, err := os.CreateTemp(filepath.Dir(real), "."+filepath.Base(real)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // fails harmlessly once renamed
	_, err = f.Write(data)
	if err == nil && st != nil && (int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid()) {
		// The new file must be the old one's owner's, as an edit in
		// place would leave it.
		if err = f.Chown(int(st.Uid), int(st.Gid)); err != nil {
			err = fmt.Errorf("keeping %s's owner %d:%d: %w", real, st.Uid, st.Gid, err)
		}
	}
	if err == nil {
		// After Chown, which clears the set-id bits.
		err = f.Chmod(info.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, real); err != nil {
		return err
	}
	// The rename itself survives a crash only once its directory is synced.
	if d, err := os.Open(filepath.Dir(real)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

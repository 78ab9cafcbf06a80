package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
)

// Exit statuses every command shares; a command may add its own above.
const (
	ExitOK     = 0
	ExitFailed = 1 // the input is invalid, or something could not be done
	ExitUsage  = 2 // the command line is wrong
)

// ErrUsage is a command-line mistake, already said on stderr.
var ErrUsage = errors.New("usage")

// exitError ends a command with Code; its problems are already on stderr.
type exitError struct {
	Code int
	Err  error
}

func (e *exitError) Error() string { return e.Err.Error() }
func (e *exitError) Unwrap() error { return e.Err }

// Fail ends a command with code.
func Fail(code int, err error) error { return &exitError{Code: code, Err: err} }

// Code is the exit status err ends a command with: ExitOK for nil or
// flag.ErrHelp, ExitUsage for ErrUsage, an exitError's own, else ExitFailed.
func Code(err error) int {
	var ee *exitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, ErrUsage):
		return ExitUsage
	}
	return ExitFailed
}

// Said reports whether err's message is already on stderr (a usage
// mistake, -help, or an exitError), so main prints nothing more.
func Said(err error) bool {
	var ee *exitError
	return errors.Is(err, ErrUsage) || errors.Is(err, flag.ErrHelp) || errors.As(err, &ee)
}

// ErrVersion is --version: the command prints its build (module version
// and VCS revision, internal/buildinfo) on stdout and exits 0.
var ErrVersion = errors.New("--version")

// NewFlagSet is a command's flags, mistakes and -help written to stderr:
// usage (what the command does, how it is called), then the flags, among
// them --version, which every command has.
func NewFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	fs.Bool("version", false, "print the version (module version and VCS revision) and exit")
	return fs
}

// Parse parses args, then MCS_<FLAG> for every flag not given, and refuses
// leftover arguments. It returns flag.ErrHelp for -help (usage printed),
// ErrVersion for --version, ErrUsage for a mistake: said on stderr in one
// line naming the flag (or its variable) and what it takes, with a pointer
// to --help rather than the whole usage.
func Parse(fs *flag.FlagSet, args []string) error {
	w, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(w)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return flag.ErrHelp
	case err != nil:
		return mistake(fs, explain(fs, err))
	}
	if v := fs.Lookup("version"); v != nil && v.Value.String() == "true" {
		return ErrVersion
	}
	if err := fromEnv(fs); err != nil {
		return mistake(fs, err)
	}
	if fs.NArg() > 0 {
		msg := "unexpected arguments: " + strings.Join(fs.Args(), " ")
		if slices.ContainsFunc(fs.Args()[1:], func(a string) bool { return strings.HasPrefix(a, "-") }) {
			// The flag package stops at the first argument: say so, or
			// the flags after it look refused for no reason.
			msg += fmt.Sprintf(" (the flags after %q were not read: flags stop at the first argument)", fs.Arg(0))
		}
		return mistake(fs, errors.New(msg))
	}
	return nil
}

// Mistake says err on fs's output as a command-line mistake, one line and
// a pointer to --help, and returns ErrUsage.
func Mistake(fs *flag.FlagSet, err error) error { return mistake(fs, err) }

func mistake(fs *flag.FlagSet, err error) error {
	fmt.Fprintf(fs.Output(), "%s: %v\nRun '%s --help' for usage.\n", fs.Name(), err, fs.Name())
	return ErrUsage
}

// fromEnv sets every flag not given on the command line from MCS_<FLAG>
// (--listen-plain: MCS_LISTEN_PLAIN); never --version.
func fromEnv(fs *flag.FlagSet) error {
	set := Given(fs)
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil || f.Name == "version" {
			return
		}
		env := EnvName(f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = &valueError{Flag: f.Name, Value: v, Env: env, Expect: expect(f), Reason: e.Error()}
			}
		}
	})
	return err
}

// EnvName is the variable a flag is read from: MCS_LISTEN_PLAIN for
// --listen-plain.
func EnvName(flag string) string { return "MCS_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_")) }

// Given names the flags set, on the command line or from the environment.
func Given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// Version is a flag.Value setting *v to a spec version the converter
// writes: --*-spec flags refuse any other as they are parsed, and show *v's
// value at definition as their default. An empty value is no version (the
// command's default), as deployment templates write an unset flag.
func Version(v *convert.Version) flag.Value { return (*version)(v) }

type version convert.Version

func (f *version) String() string {
	if f == nil || convert.Version(*f).IsZero() {
		return ""
	}
	return convert.Version(*f).String()
}

func (f *version) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		*f = version{}
		return nil
	}
	v, err := convert.ParseOutputVersion(s)
	if err != nil {
		return err
	}
	*f = version(v)
	return nil
}

// SpecBounds defines --min-spec and --max-spec, writing o's bounds, with
// the defaults render.Options.Normalized fills in shown as theirs.
func SpecBounds(fs *flag.FlagSet, o *render.Options, minUsage, maxUsage string) {
	o.MinSpec, o.MaxSpec = render.DefaultMinSpec, convert.Newest
	fs.Var(Version(&o.MinSpec), "min-spec", minUsage)
	fs.Var(Version(&o.MaxSpec), "max-spec", maxUsage)
}

// SpecFlags defines --min-spec, --max-spec and --spec, writing o.
func SpecFlags(fs *flag.FlagSet, o *render.Options, minUsage, maxUsage, specUsage string) {
	SpecBounds(fs, o, minUsage, maxUsage)
	fs.Var(Version(&o.Spec), "spec", specUsage)
}

// Hide leaves names out of fs's --help, which prints usage and the other
// flags: a command sharing another's flag definitions lists only the flags
// it accepts, and its check refuses the hidden ones saying why.
func Hide(fs *flag.FlagSet, usage string, names ...string) {
	fs.Usage = func() {
		shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		shown.SetOutput(fs.Output())
		fs.VisitAll(func(f *flag.Flag) {
			if !slices.Contains(names, f.Name) {
				shown.Var(f.Value, f.Name, f.Usage)
				shown.Lookup(f.Name).DefValue = f.DefValue
			}
		})
		fmt.Fprintf(fs.Output(), "%s\nFlags:\n", usage)
		shown.PrintDefaults()
	}
}

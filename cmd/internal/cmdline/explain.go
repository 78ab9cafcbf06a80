package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ignition-mcs/mcs/internal/text"
)

// expect says what a flag's value must be, from its type; "" for free
// text. A flag.Value that knows better says so itself (an Expect method).
func expect(f *flag.Flag) string {
	if e, ok := f.Value.(interface{ Expect() string }); ok {
		return e.Expect()
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration: a number with a unit, such as 30s, 500ms or 2m"
	case bool:
		return "true or false"
	case int, int64:
		return "a whole number"
	case uint, uint64:
		return "a whole number, 0 or more"
	case float64:
		return "a number"
	}
	return ""
}

var (
	badValue = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([^:]+): (.*)$`)
	noValue  = regexp.MustCompile(`^flag needs an argument: -(\S+)$`)
	unknown  = regexp.MustCompile(`^flag provided but not defined: -(\S+)$`)
)

// explain rewrites the flag package's error for a value of the wrong kind
// ("invalid value "abc" for flag -poll: parse error") to name the flag as
// it is written and say what it takes ("--poll: invalid value "abc": want
// a duration ..."); other errors pass.
func explain(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := unknown.FindStringSubmatch(msg); m != nil {
		return unknownFlag(fs, m[1])
	}
	if m := noValue.FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[1]); f != nil && expect(f) != "" {
			return fmt.Errorf("--%s needs a value: want %s", m[1], expect(f))
		}
		return fmt.Errorf("--%s needs a value", m[1])
	}
	m := badValue.FindStringSubmatch(msg)
	if m == nil {
		return err
	}
	f := fs.Lookup(m[2])
	if f == nil {
		return err
	}
	return &valueError{Flag: f.Name, Value: m[1], Expect: expect(f), Reason: m[3]}
}

// unknownFlag names a flag fs has not, with the one meant, found as a
// mistyped pool or key is (text.Closest): --dryrun, --dry-run.
func unknownFlag(fs *flag.FlagSet, name string) error {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if m := text.Closest(name, names); m != "" {
		return fmt.Errorf("unknown flag --%s (did you mean --%s?)", name, m)
	}
	return fmt.Errorf("unknown flag --%s", name)
}

// valueError is a flag (or its environment variable) given a value it
// does not take.
type valueError struct {
	Flag, Value string
	Env         string // MCS_POLL, when the value came from there
	Expect      string // what it takes; "" when Reason says it
	Reason      string // the flag.Value's own error
}

func (e *valueError) Error() string {
	where := "--" + e.Flag
	if e.Env != "" {
		where = e.Env + " (--" + e.Flag + ")"
	}
	switch {
	case e.Expect == "":
		return fmt.Sprintf("%s: invalid value %q: %s", where, e.Value, e.Reason)
	case generic[e.Reason]:
		return fmt.Sprintf("%s: invalid value %q: want %s", where, e.Value, e.Expect)
	}
	return fmt.Sprintf("%s: invalid value %q: %s; want %s", where, e.Value, e.Reason, e.Expect)
}

// generic are reasons that say nothing Expect does not.
var generic = map[string]bool{"parse error": true, "value out of range": true, errNotAChoice.Error(): true}

var errNotAChoice = errors.New("not one of the choices")

// choice is a string flag taking one of a closed set of values, refused
// as it is parsed.
type choice struct {
	p       *string
	choices []string
}

// Choice defines, on fs, a flag taking one of choices (any case) into p,
// value its default; --help shows them as its type ("text|json").
func Choice(fs *flag.FlagSet, p *string, name, value, usage string, choices ...string) {
	*p = value
	fs.Var(&choice{p: p, choices: choices}, name, usage+" (`"+strings.Join(choices, "|")+"`)")
}

func (c *choice) String() string {
	if c == nil || c.p == nil {
		return ""
	}
	return *c.p
}

// Set refuses a value not among the choices.
func (c *choice) Set(s string) error {
	for _, x := range c.choices {
		if strings.EqualFold(s, x) {
			*c.p = x
			return nil
		}
	}
	return errNotAChoice
}

// Expect lists the choices.
func (c *choice) Expect() string { return "one of " + strings.Join(c.choices, ", ") }

// Get returns the value, as flag.Getter.
func (c *choice) Get() any { return *c.p }

// ParseInterspersed parses args into fs, letting flags follow paths
// ("render dir --pool worker"), as CI scripts write them; after "--"
// everything is a path. A wrong value is explained as Parse explains it;
// fs's own output is left to the caller.
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var tail []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, tail = args[:i], args[i+1:]
	}
	var paths []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, explain(fs, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		paths, args = append(paths, args[0]), args[1:]
	}
	return append(paths, tail...), nil
}

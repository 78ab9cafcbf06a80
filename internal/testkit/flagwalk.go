package testkit

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// FlagWalk is one command to walk: its words (["controller"]), its help
// text (the flag package's PrintDefaults inside), and a way to run it with
// more arguments, or with one MCS_<FLAG> variable set, that gives what it
// printed on stderr and whether it refused as a usage error.
type FlagWalk struct {
	Command []string
	Help    string
	Run     func(t *testing.T, args []string, env map[string]string) (stderr string, usage bool)
	// Env, when set, names the variable a flag is read from as well ("":
	// none, as for --version).
	Env func(flag string) string
}

var helpFlag = regexp.MustCompile(`^  -(\S+)(?: (\S+))?$`)

// WalkFlags walks every flag a command's help lists (so a flag added later
// is walked without a word here): each has a description, and each whose
// value can be wrong is given a wrong one, on the command line and in its
// environment variable, and must be refused as a usage error that names
// the flag and says what it takes. Which value is wrong comes from the
// type the help shows:
//
//	(none, a bool)      "maybe"      want "true or false"
//	duration, int, ...  "abc"        want the kind ("a duration ...")
//	VERSION             "9.9.9"      want the versions supported
//	a|b|c (a choice)    "not-one"    want the choices
//	value (a flag.Func) "not valid!" want what it takes
//	string, or NAME     free text: not given a wrong value (give a closed
//	                    set of values a cmdline.Choice, and a parsed
//	                    value its own flag.Value, so that it is walked)
//
// It returns every refusal as a transcript (the command, then what it
// printed) for the caller's golden file, so that a changed message shows
// in review.
func WalkFlags(t *testing.T, w FlagWalk) string {
	t.Helper()
	var transcript strings.Builder
	cmd := strings.Join(w.Command, " ")
	flags := helpFlags(w.Help)
	if len(flags) == 0 {
		t.Fatalf("%s --help lists no flags:\n%s", strings.Join(w.Command, " "), w.Help)
	}
	for _, f := range flags {
		t.Run(strings.Join(append(append([]string{}, w.Command...), f.name), " "), func(t *testing.T) {
			if strings.TrimSpace(f.usage) == "" {
				t.Errorf("--%s has no description in --help", f.name)
			}
			if strings.Count(f.usage, "(default") > 1 {
				t.Errorf("--%s states its default twice in --help (a default read from the environment belongs after parsing): %s", f.name, f.usage)
			}
			bad, ok := wrongValue(f.kind)
			if !ok {
				return
			}
			check := func(how, stderr string, usage bool) {
				if !usage {
					t.Fatalf("%s: the value %q was not refused as a usage error (exit 2) before anything ran; a flag taking %s must refuse it as it is parsed. stderr:\n%s", how, bad, f.kind, stderr)
				}
				if !strings.Contains(stderr, "-"+f.name) {
					t.Errorf("%s: the error does not name the flag (--%s):\n%s", how, f.name, stderr)
				}
				if !strings.Contains(stderr, "want") && !strings.Contains(stderr, "supported") {
					t.Errorf("%s: the error does not say what --%s takes (\"want ...\"; a flag.Value's own error, or a flag.Value with an Expect method, says it):\n%s", how, f.name, stderr)
				}
			}
			stderr, usage := w.Run(t, []string{"--" + f.name + "=" + bad}, nil)
			check("--"+f.name+"="+bad, stderr, usage)
			fmt.Fprintf(&transcript, "$ %s --%s=%s\n%s\n", cmd, f.name, bad, stderr)
			if env := envOf(w, f.name); env != "" {
				stderr, usage = w.Run(t, nil, map[string]string{env: bad})
				check(env+"="+bad, stderr, usage)
				fmt.Fprintf(&transcript, "$ %s=%s %s\n%s\n", env, bad, cmd, stderr)
				if !strings.Contains(stderr, env) {
					t.Errorf("%s=%s: the error does not name the variable:\n%s", env, bad, stderr)
				}
			}
		})
	}
	return transcript.String()
}

func envOf(w FlagWalk, flag string) string {
	if w.Env == nil {
		return ""
	}
	return w.Env(flag)
}

type helpEntry struct{ name, kind, usage string }

func helpFlags(help string) []helpEntry {
	var out []helpEntry
	for _, line := range strings.Split(help, "\n") {
		if m := helpFlag.FindStringSubmatch(line); m != nil {
			out = append(out, helpEntry{name: m[1], kind: m[2]})
			continue
		}
		if len(out) > 0 && strings.HasPrefix(line, "    \t") {
			out[len(out)-1].usage += strings.TrimSpace(line) + " "
		}
	}
	return out
}

// wrongValue is a value a flag of the kind its help shows cannot take;
// false for free text.
func wrongValue(kind string) (string, bool) {
	switch {
	case kind == "":
		return "maybe", true
	case kind == "duration" || kind == "float" || strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint"):
		return "abc", true
	case kind == "VERSION":
		return "9.9.9", true
	case strings.Contains(kind, "|"):
		return "not-one", true
	case kind == "value":
		return "not valid!", true
	}
	return "", false
}

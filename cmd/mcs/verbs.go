package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
	"github.com/ignition-mcs/mcs/internal/text"
)

// verbOf is the verb args start with, for a command taking verbs (mcs pki,
// mcs cutover): --help prints help's whole usage, --version the version,
// anything else is a usage error listing the verbs.
func verbOf(name string, verbs, args []string, help func() *flag.FlagSet, stderr io.Writer) (string, error) {
	if len(args) > 0 && slices.Contains(verbs, args[0]) {
		return args[0], nil
	}
	switch {
	case len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		return "", cmdline.Parse(help(), args[:1])
	case len(args) > 0 && (args[0] == "-version" || args[0] == "--version"):
		return "", cmdline.ErrVersion
	}
	what := "no verb"
	if len(args) > 0 {
		what = fmt.Sprintf("unknown verb %q", args[0])
		if m := text.Closest(args[0], verbs); m != "" {
			what += " (did you mean " + m + "?)"
		}
	}
	want := strings.Join(verbs[:len(verbs)-1], ", ") + " or " + verbs[len(verbs)-1]
	fmt.Fprintf(stderr, "%s: %s: want %s\nRun '%s --help' for usage.\n", name, what, want, name)
	return "", cmdline.ErrUsage
}

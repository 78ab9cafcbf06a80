package main

import (
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// TestFlagsWalk walks every flag of render, render diff and render lower, as their
// --help lists them (a flag added later is walked too), through a wrong
// value: see testkit.WalkFlags for which and what the error must say.
func TestFlagsWalk(t *testing.T) {
	var transcript strings.Builder
	for _, words := range [][]string{nil, {"diff"}, {"lower"}} {
		help, _, _ := cli(t, "", append(words, "--help")...)
		transcript.WriteString(testkit.WalkFlags(t, testkit.FlagWalk{
			Command: append([]string{"render"}, words...),
			Help:    help,
			Run: func(t *testing.T, args []string, _ map[string]string) (string, bool) {
				_, stderr, code := cli(t, "", append(append([]string{}, words...), args...)...)
				return stderr, code == exitUsage
			},
		}))
	}
	testkit.Golden(t, "testdata/flag-errors.txt", transcript.String(), *update)
}

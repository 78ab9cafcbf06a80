package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
	"github.com/ignition-mcs/mcs/internal/testkit"
)

var commandLine = regexp.MustCompile(`^  (\S+)\s+(?:([a-z]+(?:\|[a-z]+)+):)?`)

// flagEnv is the variable a flag is also read from; --version has none.
func flagEnv(flag string) string {
	if flag == "version" {
		return ""
	}
	return cmdline.EnvName(flag)
}

// mcsHelp is what `mcs WORDS... --help` prints.
func mcsHelp(t *testing.T, words ...string) string {
	t.Helper()
	var out, errb strings.Builder
	if err := dispatch(context.Background(), append(words, "--help"), strings.NewReader(""), &out, &errb); err != nil && !errors.Is(err, flag.ErrHelp) || cmdline.Code(err) != 0 {
		t.Fatalf("mcs %s --help: %v (exit %d)\n%s", strings.Join(words, " "), err, cmdline.Code(err), errb.String())
	}
	return out.String() + errb.String()
}

// helpCommands are the commands mcs --help lists, each verb of one taking
// verbs ("status|rotate: ...") on its own.
func helpCommands(t *testing.T) [][]string {
	help := mcsHelp(t)
	_, list, ok := strings.Cut(help, "\nCommands:\n")
	if !ok {
		t.Fatalf("mcs --help lists no commands:\n%s", help)
	}
	list, _, _ = strings.Cut(list, "\n\n")
	var cmds [][]string
	for _, line := range strings.Split(strings.TrimRight(list, "\n"), "\n") {
		m := commandLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("mcs --help: %q is not a command line (\"  NAME  summary\")", line)
		}
		if m[2] == "" {
			cmds = append(cmds, []string{m[1]})
			continue
		}
		for _, verb := range strings.Split(m[2], "|") {
			cmds = append(cmds, []string{m[1], verb})
		}
	}
	if len(commands()) < 6 || len(cmds) < len(commands()) {
		t.Fatalf("mcs --help lists %v; want every command of %d", cmds, len(commands()))
	}
	return cmds
}

var update = flag.Bool("update", false, "rewrite the golden files")

// TestFlagsWalk walks every flag of mcs and of every command its --help
// lists (controller, prune, pki status, pki rotate, start, bootstrap,
// preflight, and any added later), through --help and a wrong value on
// the command line and in MCS_<FLAG> (see testkit.WalkFlags for the wrong
// values and what the errors must say).
func TestFlagsWalk(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nothing a mistaken flag lets through may run for long
	var transcript strings.Builder
	for _, words := range append([][]string{nil}, helpCommands(t)...) {
		transcript.WriteString(testkit.WalkFlags(t, testkit.FlagWalk{
			Command: append([]string{"mcs"}, words...),
			Help:    mcsHelp(t, words...),
			Env:     flagEnv,
			Run: func(t *testing.T, args []string, env map[string]string) (string, bool) {
				for k, v := range env {
					t.Setenv(k, v)
				}
				var out, errb strings.Builder
				err := dispatch(ctx, append(append([]string{}, words...), args...), strings.NewReader(""), &out, &errb)
				return errb.String(), cmdline.Code(err) == cmdline.ExitUsage
			},
		}))
	}
	testkit.Golden(t, "testdata/flag-errors.txt", transcript.String(), *update)
}

// --version works for every command, on stdout, and names the build.
func TestVersionEverywhere(t *testing.T) {
	for _, words := range append([][]string{nil, {"--dir", "x"}}, helpCommands(t)...) {
		args := append(append([]string{}, words...), "--version")
		var out, errb strings.Builder
		err := dispatch(context.Background(), args, strings.NewReader(""), &out, &errb)
		if err != nil || !strings.HasPrefix(out.String(), "mcs ") || !strings.Contains(out.String(), "(") || errb.Len() > 0 {
			t.Errorf("mcs %s: %v, stdout %q, stderr %q", strings.Join(args, " "), err, out.String(), errb.String())
		}
	}
}

// Numbers a flag's type allows but its meaning does not are usage
// mistakes too, named with what they take.
func TestFlagRanges(t *testing.T) {
	var transcript strings.Builder
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"controller", "--kube-api-qps", "0"}, "--kube-api-qps and --kube-api-burst: want a positive number"},
		{[]string{"controller", "--workers", "0"}, "--workers: want 1 or more"},
		{[]string{"controller", "--keep", "-1"}, "--keep: want 0 or more"},
		{[]string{"prune", "--count", "-2"}, "--keep and --count: want 0 or more"},
		{[]string{"admit", "--recheck", "0s"}, "--recheck: want a positive duration"},
		{[]string{"admit", "--max-spec", "2.2.0"}, "--max-spec 2.2.0: want a spec-3 version mcs writes"},
		{[]string{"contoller", "--kubeconfig", "x"}, `mcs: unknown command "contoller" (did you mean controller?): want one of controller, prune, pki, start, bootstrap, preflight, cutover, admit`},
		{[]string{"pki", "rotat"}, `mcs pki: unknown verb "rotat" (did you mean rotate?): want status or rotate`},
		{[]string{"pki"}, `mcs pki: no verb: want status or rotate`},
		{[]string{"admit", "webhook-config"}, "mcs admit webhook-config: want --url or --service, one of them"},
		{[]string{"admit", "webhook-config", "--url", "https://127.0.0.1:9443"}, "--ca-file: want the CA that signed mcs admit's certificate"},
		{[]string{"admit", "webhook-config", "--service", "mcs-admit", "--ca-file", "x"}, `--service "mcs-admit": want NAMESPACE/NAME`},
		{[]string{"admit", "webhook-config", "--url", "http://127.0.0.1:9443", "--ca-file", "testdata/admit-rule-tests.yaml"}, `--url: "http://127.0.0.1:9443": want https://`},
		{[]string{"admit", "webhook-config", "--url", "https://127.0.0.1:9443", "--ca-file", "testdata/admit-rule-tests.yaml"}, "--ca-file testdata/admit-rule-tests.yaml: no PEM certificate in it"},
		{[]string{"controller", "--dryrun"}, `mcs controller: unknown flag --dryrun (did you mean --dry-run?)`},
		{[]string{"admit", "--max-sepc", "3.2.0"}, `mcs admit: unknown flag --max-sepc (did you mean --max-spec?)`},
		{[]string{"--dir", "x", "extra", "--poll", "1s"}, `mcs: unexpected arguments: extra --poll 1s (the flags after "extra" were not read: flags stop at the first argument)`},
	} {
		var out, errb strings.Builder
		err := dispatch(context.Background(), c.args, strings.NewReader(""), &out, &errb)
		if cmdline.Code(err) != cmdline.ExitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("mcs %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), cmdline.Code(err), errb.String(), c.want)
		}
		fmt.Fprintf(&transcript, "$ mcs %s\n%s\n", strings.Join(c.args, " "), errb.String())
	}
	testkit.Golden(t, "testdata/flag-ranges.txt", transcript.String(), *update)
}

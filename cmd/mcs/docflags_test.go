package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	docFlag  = regexp.MustCompile(`(?:^|[\s"'(=\[])--([a-z][a-z0-9-]*[a-z0-9])`)
	docSpan  = regexp.MustCompile("`([^`\n]+)`")
	helpFlag = regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)
)

// otherTools start the commands in the docs whose flags are not mcs's.
var otherTools = []string{"oc", "kubectl", "curl", "podman", "unshare", "jq", "git", "go", "make", "ls", "sed", "base64", "openssl", "wrk", "ignition", "butane", "chromium", "etcd"}

// Every --flag the README and docs name in code (a span, or a line of a
// block) is a flag of mcs, one of its commands or render, unless the code
// is another tool's command line (oc, curl, podman, ...): a renamed or
// mistyped flag in the docs fails here, not at an admin's prompt.
func TestDocFlags(t *testing.T) {
	known := map[string]bool{"help": true}
	// admit's subcommands are named in its usage, not in mcs --help.
	for _, words := range append(append([][]string{nil}, helpCommands(t)...), []string{"admit", "lower-existing"}, []string{"admit", "webhook-config"}) {
		for _, m := range helpFlag.FindAllStringSubmatch(mcsHelp(t, words...), -1) {
			known[m[1]] = true
		}
	}
	for _, words := range [][]string{nil, {"diff"}, {"lower"}} {
		out, _ := exec.Command("go", append(append([]string{"run", "../render"}, words...), "--help")...).CombinedOutput()
		ms := helpFlag.FindAllStringSubmatch(string(out), -1)
		if len(ms) < 3 {
			t.Fatalf("render %v --help lists no flags:\n%s", words, out)
		}
		for _, m := range ms {
			known[m[1]] = true
		}
	}
	docs, _ := filepath.Glob("../../docs/*.md")
	docs = append(docs, "../../README.md", "../../deploy/README.md")
	checked := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			code := []string{line}
			if c, _, ok := strings.Cut(line, " # "); fenced && ok {
				code = []string{c} // a shell comment's words are prose
			}
			if !fenced {
				code = nil
				for _, m := range docSpan.FindAllStringSubmatch(line, -1) {
					code = append(code, m[1])
				}
			}
			for _, c := range code {
				fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(c), "$ "))
				if len(fields) > 0 && slices.Contains(otherTools, fields[0]) {
					continue
				}
				for _, m := range docFlag.FindAllStringSubmatch(c, -1) {
					checked++
					if !known[m[1]] {
						t.Errorf("%s:%d: --%s is no flag of mcs, its commands or render: %s", strings.TrimPrefix(doc, "../../"), i+1, m[1], strings.TrimSpace(c))
					}
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d flags named in the docs were checked", checked)
	}
}

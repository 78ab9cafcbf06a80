package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// make run says what it does before a long first build, runs the binary
// it built (exec: the PID it prints is the server's, so stopping it leaves
// no `go run` child serving), and its old-client hint names a tree whose
// worker pool an Ignition v2.9 node cannot read, so the hint shows the
// skew stub rather than a config.
func TestMakeRunHints(t *testing.T) {
	toRoot(t)
	b, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	mk := string(b)
	_, recipe, ok := strings.Cut(mk, "\nrun:\n")
	if !ok {
		t.Fatal("no run target")
	}
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	build, execAt := strings.Index(recipe, "$(GO) build -o $(BIN)/mcs"), strings.Index(recipe, "exec $(BIN)/mcs")
	if strings.Contains(recipe, "go run") || strings.Contains(recipe, "$(GO) run") || build < 0 || execAt < build {
		t.Errorf("make run does not build, then exec the binary:\n%s", recipe)
	}
	if say := strings.Index(recipe, "first build"); say < 0 || say > build {
		t.Errorf("make run says nothing before the first build:\n%s", recipe)
	}
	m := regexp.MustCompile(`(?m)^RUN_STUB_DIR := (\S+)$`).FindStringSubmatch(mk)
	if m == nil || !strings.Contains(recipe, "RUN_DIR=$(RUN_STUB_DIR)") {
		t.Fatalf("no RUN_STUB_DIR for the old-client hint")
	}
	out, errs, code := cli(t, "", "--client", "Ignition/v2.9.0", "--accept", "application/vnd.coreos.ignition+json;version=3.2.0, */*;q=0.1", "--pool", "worker", m[1])
	if code != exitOK || !strings.Contains(out, "mcs-cannot-join-worker") {
		t.Errorf("the hint's tree %s gives an Ignition v2.9 node no stub: exit %d\n%s\n%s", m[1], code, out, errs)
	}
}

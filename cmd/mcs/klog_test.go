package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
	"github.com/ignition-mcs/mcs/internal/syncbuf"
	"github.com/ignition-mcs/mcs/internal/testkit"
)

const mainArgsEnv = "MCS_TEST_MAIN_ARGS"

// client-go's lines (leader election, watches) come out in mcs's log
// format: with --log-format json every line on stderr is one JSON record
// with one msg, the Lease's errors among them; with text, slog's text.
// mcs runs as its own process (main, which routes klog), this test binary
// re-executed, against an API server that refuses connections.
func TestKlogInLogFormat(t *testing.T) {
	if args := os.Getenv(mainArgsEnv); args != "" {
		os.Args = append([]string{"mcs"}, strings.Split(args, "\n")...)
		main()
		os.Exit(0)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600)
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			args := []string{"controller", "--kubeconfig", kc, "--listen", "127.0.0.1:0", "--log-format", format, "--retry-period", "200ms"}
			cmd := exec.Command(os.Args[0], "-test.run", "^TestKlogInLogFormat$")
			cmd.Env = append(os.Environ(), mainArgsEnv+"="+strings.Join(args, "\n"))
			var stderr syncbuf.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the Lease's error from client-go", func() bool { return strings.Contains(stderr.String(), "lease lock") })
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatal("mcs controller did not stop on SIGTERM")
			}
			t.Logf("stderr:\n%s", stderr.String())
			for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				if err := logLine(format, line); err != nil {
					t.Errorf("--log-format %s: %v:\n%s", format, err, line)
				}
			}
		})
	}
}

// logLine is an error when line is not one record of format.
func logLine(format, line string) error {
	if format == "text" {
		if !strings.HasPrefix(line, "time=") || !strings.Contains(line, " msg=") {
			return errNotRecord
		}
		return nil
	}
	var rec map[string]any
	if err := json.NewDecoder(bytes.NewReader([]byte(line))).Decode(&rec); err != nil || rec["msg"] == nil {
		return errNotRecord
	}
	return keysOnce(line)
}

var errNotRecord = errors.New("not a log record")

// With no --kubeconfig, outside a cluster and with no kubeconfig file,
// every command that needs the API server says which files it looked for
// (not client-go's "try setting KUBERNETES_MASTER"); a --kubeconfig that
// is missing or names no cluster is that flag's mistake, naming the file;
// testdata/no-api-server.txt.
func TestNoAPIServerSaysWhatItTried(t *testing.T) {
	dir := t.TempDir()
	missing, empty := filepath.Join(dir, "missing"), filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	// (~/.kube/config, tried when $KUBECONFIG is unset, is this machine's.)
	t.Setenv("KUBECONFIG", missing+string(filepath.ListSeparator)+empty)
	var transcript strings.Builder
	commands := [][]string{{"controller", "--listen", "127.0.0.1:0"}, {"prune"}, {"pki", "status"}, {"preflight"}, {"--source", "kube", "--listen-plain", "127.0.0.1:0", "--listen-tls", ""}}
	for _, kc := range []string{"", missing, empty} {
		for _, words := range commands {
			if kc != "" {
				words = append(slices.Clip(words), "--kubeconfig", kc)
			}
			var out, errb strings.Builder
			err := dispatch(context.Background(), words, strings.NewReader(""), &out, &errb)
			msg := errb.String()
			if err != nil && !cmdline.Said(err) {
				msg += "mcs: " + err.Error() + "\n"
			}
			fmt.Fprintf(&transcript, "$ KUBECONFIG=%s mcs %s\n%s", os.Getenv("KUBECONFIG"), strings.Join(words, " "), msg)
			want := "no kubeconfig ("
			if kc != "" {
				want = "mcs: --kubeconfig: "
			}
			if err == nil || strings.Contains(msg, "KUBERNETES_MASTER") || !strings.Contains(msg, want) || !strings.Contains(msg, kc) {
				t.Errorf("mcs %s: %v\n%s", strings.Join(words, " "), err, msg)
			}
		}
	}
	testkit.Golden(t, "testdata/no-api-server.txt", strings.ReplaceAll(transcript.String(), dir, "<tmp>"), *update)
}

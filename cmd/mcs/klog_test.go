package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/syncbuf"
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

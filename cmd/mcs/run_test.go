package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/internal/serving"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

func TestUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want error
		msg  string
	}{
		{"no dir", nil, nil, cmdline.ErrUsage, "--dir is required"},
		{"unknown flag", []string{"--nope"}, nil, cmdline.ErrUsage, "unknown flag --nope"},
		{"cert without key", []string{"--dir", ".", "--cert", "c.pem"}, nil, cmdline.ErrUsage, "--cert and --key go together"},
		{"bad port alias", []string{"--dir", ".", "--insecure-port", "http"}, nil, cmdline.ErrUsage, "not a port"},
		{"stray argument", []string{"--dir", ".", "extra"}, nil, cmdline.ErrUsage, "unexpected arguments"},
		{"bad env", []string{"--dir", "."}, map[string]string{"MCS_HTTP2": "maybe"}, cmdline.ErrUsage, "MCS_HTTP2"},
		{"kube with dir", []string{"--source", "kube", "--dir", "."}, nil, cmdline.ErrUsage, "--dir is for --source dir"},
		{"unknown source", []string{"--source", "git"}, nil, cmdline.ErrUsage, `--source: invalid value "git": want one of dir, kube`},
		{"bad render mode", []string{"--source", "kube", "--render-mode", "cluster"}, nil, cmdline.ErrUsage, "--render-mode"},
		{"source from env", nil, map[string]string{"MCS_SOURCE": "kube", "MCS_RENDER_MODE": "both"}, cmdline.ErrUsage, "--render-mode"},
		{"bad spec", []string{"--dir", ".", "--spec", "3.9.0"}, nil, cmdline.ErrUsage, `--spec: invalid value "3.9.0": cannot write spec version "3.9.0"`},
		{"bad default spec", []string{"--dir", ".", "--default-spec", "1.0.0"}, nil, cmdline.ErrUsage, "--default-spec: invalid value \"1.0.0\""},
		{"bad spec from env", []string{"--dir", "."}, map[string]string{"MCS_MIN_SPEC": "2.4.0"}, cmdline.ErrUsage, `MCS_MIN_SPEC (--min-spec): invalid value "2.4.0": cannot write spec version "2.4.0"`},
		{"bad log format", []string{"--log-format", "xml"}, nil, cmdline.ErrUsage, `--log-format: invalid value "xml": want one of text, json`},
		{"poll from env", []string{"--dir", "."}, map[string]string{"MCS_POLL": "abc"}, cmdline.ErrUsage, `MCS_POLL (--poll): invalid value "abc": want a duration`},
		{"version", []string{"--version"}, nil, cmdline.ErrVersion, ""},
		{"help", []string{"--help"}, nil, nil, "MCS_<FLAG>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), c.args, nil, &stdout, &stderr)
			if !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			if !strings.Contains(stderr.String(), c.msg) {
				t.Fatalf("stderr lacks %q:\n%s", c.msg, stderr.String())
			}
		})
	}
}

func TestOptionErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		msg  string
		kube bool
	}{
		{"missing token file", []string{"--auth-token-file", "/nonexistent"}, "--auth-token-file", false},
		{"bad policy", []string{"--skew-policy", "/nonexistent"}, "--skew-policy: ", false},
		{"missing certificate", []string{"--cert", "/nonexistent.crt", "--key", "/nonexistent.key", "--listen-tls", "127.0.0.1:0"}, "TLS certificate /nonexistent.crt and key /nonexistent.key (--cert, --key): ", false},
		{"missing kubeconfig", []string{"--source", "kube", "--kubeconfig", "/nonexistent"}, "--kubeconfig: stat /nonexistent: no such file or directory", true},
	}
	var transcript strings.Builder
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"--dir", dir, "--listen-plain", "127.0.0.1:0"}, c.args...)
			if c.kube {
				args = append([]string{"--listen-plain", "127.0.0.1:0"}, c.args...)
			}
			err := run(context.Background(), args, nil, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err %v, want one with %q", err, c.msg)
			}
			fmt.Fprintf(&transcript, "%s:\n%s\n", c.name, strings.ReplaceAll(err.Error(), dir, "$DIR"))
		})
	}
	testkit.Golden(t, "testdata/option-errors.txt", transcript.String(), *update)
}

// TestMissingDir: a --dir that names nothing (or a file) stops mcs at
// start naming the flag, instead of a server that logs "serving the last
// good render" with none and is never ready.
func TestMissingDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(file, nil, 0o600)
	for dir, want := range map[string]string{"/nonexistent": "--dir /nonexistent: no such directory", file: "--dir " + file + ": not a directory"} {
		var stderr bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := run(ctx, []string{"--dir", dir, "--listen-plain", "127.0.0.1:0", "--listen-tls", ""}, nil, io.Discard, &stderr)
		cancel()
		if err == nil || err.Error() != want || cmdline.Code(err) != cmdline.ExitFailed {
			t.Errorf("--dir %s: %v (exit %d), want %q, exit 1", dir, err, cmdline.Code(err), want)
		}
		if strings.Contains(stderr.String(), "last good render") {
			t.Errorf("--dir %s: logs a last good render there is none of:\n%s", dir, stderr.String())
		}
	}
}

// helloMC is a worker MachineConfig named name whose one file, path,
// holds content with mode (nil: 420).
func helloMC(name, path, content string, mode any) string {
	return mctest.Config{Name: name, Role: "worker", Files: []mctest.File{{Path: path, Source: "data:," + content, Mode: mode, Overwrite: true}}}.YAML()
}

// workerMC is the worker pool's 50-worker-hello, its /etc/hello holding content.
func workerMC(content string) string { return helloMC("50-worker-hello", "/etc/hello", content, nil) }

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// The whole server: start, serve, survive a bad edit, pick up a good one,
// shut down on cancel.
func TestServeDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "50-worker-hello.yaml", workerMC("one"))
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("# rotated weekly\n"+s3cret+"\n"+masterOnly+" master arbiter\n"), 0o600)
	in := start(t, "--dir", dir, "--listen-plain", "127.0.0.1:0", "--listen-tls", "",
		"--poll", "20ms", "--debounce", "20ms", "--auth-token-file", tokens, "--log-format", "json")
	fetchAs := func(path, token string) (int, string) {
		h := []string{"Accept", "application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1"}
		if token != "" {
			h = append(h, "Authorization", "Bearer "+token)
		}
		code, b, err := in.get(path, h...)
		if err != nil {
			return 0, err.Error()
		}
		return code, string(b)
	}
	fetch := func(path string, auth bool) (int, string) {
		if auth {
			return fetchAs(path, s3cret)
		}
		return fetchAs(path, "")
	}
	waitFor(t, "ready", func() bool { c, _ := fetch("/readyz", false); return c == 200 })
	if c, _ := fetch("/config/worker", false); c != 511 {
		t.Fatalf("without token: %d", c)
	}
	if c, _ := fetchAs("/config/worker", masterOnly); c != 511 {
		t.Fatalf("a master-only token fetching worker: %d", c)
	}
	for _, path := range []string{"/status", "/metrics"} {
		if c, _ := fetch(path, false); c != 401 {
			t.Errorf("%s without a token: %d", path, c)
		}
	}
	if c, body := fetch("/config/worker", true); c != 200 || !strings.Contains(body, "data:,one") {
		t.Fatalf("%d %.200s", c, body)
	}

	// A bad edit: the last good render keeps serving, status says why.
	writeFile(t, dir, "60-bad.yaml", helloMC("60-bad", "/etc/hello", "GEN", "bogus"))
	waitFor(t, "render error in /status", func() bool {
		_, st := fetch("/status", true)
		var s struct{ LastError *struct{ Message string } }
		json.Unmarshal([]byte(st), &s)
		return s.LastError != nil && strings.Contains(s.LastError.Message, "60-bad")
	})
	if c, body := fetch("/config/worker", true); c != 200 || !strings.Contains(body, "data:,one") {
		t.Fatalf("after a bad edit: %d %.200s", c, body)
	}
	os.Remove(filepath.Join(dir, "60-bad.yaml"))
	writeFile(t, dir, "50-worker-hello.yaml", workerMC("two"))
	waitFor(t, "new render served", func() bool { _, body := fetch("/config/worker", true); return strings.Contains(body, "data:,two") })

	if err := in.stop(); err != nil {
		t.Fatal(err)
	}
	logs := in.stderr.String()
	if strings.Contains(logs, s3cret) || strings.Contains(logs, "data:,") {
		t.Fatal("logs carry a token or config contents")
	}
	if !strings.Contains(logs, `"msg":"config request"`) {
		t.Fatalf("no request log lines:\n%s", logs)
	}
	if !strings.Contains(logs, `"msg":"node waiting`) {
		t.Fatalf("no node-waiting line (the token-missing answer):\n%s", logs)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if err := keysOnce(line); err != nil {
			t.Errorf("--log-format json: %v: log pipelines keep one of them:\n%s", err, line)
		}
	}
}

// keysOnce is an error when a JSON object in line names a key twice.
func keysOnce(line string) error {
	return valueKeysOnce(json.NewDecoder(strings.NewReader(line)))
}

// valueKeysOnce reads one JSON value from dec, failing on a key named
// twice in any object of it.
func valueKeysOnce(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			if seen[k.(string)] {
				return fmt.Errorf("key %q twice in one record", k)
			}
			seen[k.(string)] = true
			if err := valueKeysOnce(dec); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for dec.More() {
			if err := valueKeysOnce(dec); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// waitFor polls ok until it holds. Its deadline is a minute, not seconds:
// under -race on a loaded two-core CI machine mcs start took over 10 s to
// serve its first render (TestCutoverRehearsal, load 27), and a passing
// wait returns as soon as it holds.
func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	testkit.Eventually(t, time.Minute, what, func() error {
		if !ok() {
			return errors.New("not yet")
		}
		return nil
	})
}

// Whether --listen-tls was asked for is what was given, not whether its
// value differs from the default: asked for without a certificate, it is an
// error; left at its default, the TLS listener is off with a warning.
func TestListenTLSWithoutCertificate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string // MCS_LISTEN_TLS
		err  string
	}{
		{name: "default", args: nil},
		{name: "off", args: []string{"--listen-tls", ""}},
		{name: "the default address given", args: []string{"--listen-tls", ":22623"}, err: "--listen-tls needs --cert and --key"},
		{name: "another address", args: []string{"--listen-tls", "127.0.0.1:0"}, err: "--listen-tls needs --cert and --key"},
		{name: "upstream's alias", args: []string{"--secure-port", "22623"}, err: "--secure-port needs --cert and --key"},
		{name: "from the environment", env: ":22623", err: "--listen-tls needs --cert and --key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("MCS_LISTEN_TLS", tc.env)
			}
			var said strings.Builder
			o, err := parseFlags(append([]string{"--dir", t.TempDir(), "--listen-plain", "127.0.0.1:0"}, tc.args...), &said)
			if tc.err != "" && err != nil {
				if !strings.Contains(said.String(), tc.err) {
					t.Fatalf("refused saying %q, want %q", said.String(), tc.err)
				}
				return // refused as a usage error, naming the flag typed
			}
			if err != nil {
				t.Fatal(err)
			}
			servers, err := o.config().Listen(http.NotFoundHandler(), slog.New(slog.DiscardHandler), serving.Listeners{})
			for _, s := range servers {
				s.Listener.Close()
			}
			if tc.err == "" && (err != nil || len(servers) != 1 || servers[0].TLS) {
				t.Fatalf("listen: %v, %d servers", err, len(servers))
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("listen: %v, want %q", err, tc.err)
			}
		})
	}
}

// An empty spec value, as deployment templates write an unset one, is the
// default, on the command line and in the environment alike.
func TestEmptySpecValues(t *testing.T) {
	t.Setenv("MCS_MAX_SPEC", "")
	t.Setenv("MCS_DEFAULT_SPEC", "")
	o, err := parseFlags([]string{"--dir", t.TempDir(), "--spec="}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := (render.Options{MinSpec: render.DefaultMinSpec}); o.Render != want || !o.DefaultSpec.IsZero() {
		t.Errorf("options %+v, default spec %s; want %+v and none", o.Render, o.DefaultSpec, want)
	}
}

// Tokens of the tests, 128 bits and more.
const (
	s3cret     = "s3cret-Hq7Wm2Xp9Ks4Vt8Nz3Lb"
	masterOnly = "master-only-Rf5Gk8Jd2Pw6Yc9M"
	allPools   = "all-pools-Tn4Bx7Qe1Uh5Za8S"
	workerTok  = "worker-tok-Lm3Vc6Ry9Fk2Wp5D"
	bothTok    = "both-Ej8Hs1Nq4Xt7Gb3Kv6"
)

package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/internal/httpserve"
	"github.com/ignition-mcs/mcs/internal/serving"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/internal/tlsnames"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/source/kube"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

// OpenShift's DaemonSet's command line is mcs start's, with OpenShift's
// defaults for what it leaves out.
func TestStartFlags(t *testing.T) {
	tokens := tokenDir(t)
	o, err := parseStartFlags([]string{"--apiserver-url=https://api-int.c.example.com:6443", "--payload-version=4.21.0", "--bootstrap-token-dir=" + tokens,
		"--tls-cipher-suites=TLS_AES_128_GCM_SHA256,ECDHE-RSA-AES128-GCM-SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
		"--tls-min-version=VersionTLS13", "--v=4"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := options{Config: serving.Config{Cert: defaultCert, Key: defaultKey, Source: "kube", RenderMode: "pool", ListenTLS: ":22623", ListenPlain: ":22624"}, log: logOptions{level: "debug"}}
	if o.Cert != want.Cert || o.Key != want.Key || o.Source != want.Source || o.RenderMode != want.RenderMode ||
		o.ListenTLS != want.ListenTLS || o.ListenPlain != want.ListenPlain || o.log.level != want.log.level {
		t.Errorf("got %+v", o)
	}
	if o.ListenAdmin != defaultAdmin {
		t.Errorf("--listen-admin %q, want %q", o.ListenAdmin, defaultAdmin)
	}
	if o.start.TokenDir != tokens || o.start.APIServerURL != "https://api-int.c.example.com:6443" || o.start.PayloadVersion != "4.21.0" {
		t.Errorf("start options %+v", o.start)
	}
	cfg := o.tls.config()
	wantSuites := []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}
	if cfg.MinVersion != tls.VersionTLS13 || !slices.Equal(cfg.CipherSuites, wantSuites) {
		t.Errorf("TLS: min %x suites %x", cfg.MinVersion, cfg.CipherSuites)
	}
	// The ports as upstream's int flags, and an empty cipher list (the MCO
	// renders --tls-cipher-suites= for an empty profile list).
	o, err = parseStartFlags([]string{"--apiserver-url", "https://x:6443", "--bootstrap-token-dir", tokens, "--secure-port", "9443", "--insecure-port=9080", "--tls-cipher-suites="}, io.Discard)
	if err != nil || o.ListenTLS != ":9443" || o.ListenPlain != ":9080" {
		t.Fatalf("%v %+v", err, o)
	}
	intermediate := tlsnames.Intermediate()
	if got := o.tls.config(); got.MinVersion != tls.VersionTLS12 || !slices.Equal(got.CipherSuites, intermediate) {
		t.Errorf("defaults: min %x suites %x", got.MinVersion, got.CipherSuites)
	}

	for name, args := range map[string][]string{
		"no URL":             {},
		"unknown cipher":     {"--apiserver-url=u", "--tls-cipher-suites=RC4-MD5-NONSENSE"},
		"unknown TLS":        {"--apiserver-url=u", "--tls-min-version=VersionTLS14"},
		"a directory":        {"--apiserver-url=u", "--dir", "/tmp"},
		"a fixed kubeconfig": {"--apiserver-url=u", "--bootstrap-kubeconfig", "/tmp/k"},
		"not kube":           {"--apiserver-url=u", "--source", "dir"},
	} {
		if _, err := parseStartFlags(args, io.Discard); err != cmdline.ErrUsage {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// tokenDir is a directory holding the node-bootstrapper token's files.
func tokenDir(t *testing.T) string {
	dir := t.TempDir()
	for _, f := range kube.TokenFiles(dir) {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// What mcs start refuses, word for word: each would start a server whose
// nodes fail later, far from the cause, or a flag it would ignore.
func TestStartRefuses(t *testing.T) {
	tokens := filepath.Join("testdata", "token-dir")
	url := "--apiserver-url=https://api-int.c.example.com:6443"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"placeholder-url", []string{"start", "--apiserver-url", "https://api-int.CLUSTER.DOMAIN:6443", "--bootstrap-token-dir", "/nonexistent"}},
		{"angle-bracket-url", []string{"start", "--apiserver-url", "https://api-int.<cluster>:6443", "--bootstrap-token-dir", tokens}},
		{"plain-http-url", []string{"start", "--apiserver-url", "http://api-int.c.example.com:6443", "--bootstrap-token-dir", tokens}},
		{"no-url", []string{"start", "--bootstrap-token-dir", tokens}},
		{"missing-token-dir", []string{"start", url, "--bootstrap-token-dir", "/nonexistent"}},
		{"dir-only-flag", []string{"start", url, "--bootstrap-token-dir", tokens, "--max-file-size", "1Mi"}},
		{"secure-port-without-cert", []string{"--secure-port", "22700", "--dir", "../../fixtures/cluster"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb strings.Builder
			err := dispatch(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
			got := fmt.Sprintf("$ mcs %s\nexit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(tc.args, " "), cmdline.Code(err), out.String(), errb.String())
			testkit.Golden(t, filepath.Join("testdata", "refused", tc.name+".txt"), got, *update)
		})
	}
}

// mcs start and mcs bootstrap share mcs's flag definitions: their help
// lists none they refuse; mcs pki --help is its verbs' whole help.
func TestHelpListsAccepted(t *testing.T) {
	listed := regexp.MustCompile(`(?m)^  -(\S+)`)
	for _, c := range []struct {
		words   []string
		refused []string
	}{{[]string{"start"}, startRefused}, {[]string{"bootstrap"}, bootstrapRefused}} {
		help := mcsHelp(t, c.words...)
		for _, m := range listed.FindAllStringSubmatch(help, -1) {
			if slices.Contains(c.refused, m[1]) {
				t.Errorf("mcs %s --help lists --%s, which it refuses", c.words[0], m[1])
			}
		}
		if !strings.Contains(help, "-cert string") {
			t.Errorf("mcs %s --help lacks the flags it accepts:\n%s", c.words[0], help)
		}
	}
	if help := mcsHelp(t, "pki"); !strings.Contains(help, "rotate: a new CA now") || !strings.Contains(help, "-pki-ca-validity") {
		t.Errorf("mcs pki --help:\n%s", help)
	}
}

// mcs start's node ports answer /config/ and the probes only; /status and
// /metrics are on --listen-admin. Plain mcs serves them on every port.
func TestStartAdminOnly(t *testing.T) {
	for _, tc := range []struct {
		name       string
		start      bool
		nodeStatus int
	}{{"mcs start", true, http.StatusNotFound}, {"mcs", false, http.StatusOK}} {
		t.Run(tc.name, func(t *testing.T) {
			o := &options{Config: serving.Config{ListenPlain: "127.0.0.1:0", ListenAdmin: "127.0.0.1:0"}}
			srv, err := serve.New(serve.Config{})
			if err != nil {
				t.Fatal(err)
			}
			ls := serving.Listeners{Admin: srv.AdminHandler()}
			if tc.start {
				ls.Nodes = srv.NodeHandler()
			}
			servers, err := o.config().Listen(srv, slog.New(slog.DiscardHandler), ls)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range servers {
				go s.Serve()
				t.Cleanup(func() { s.HTTP.Close() })
			}
			code := func(s httpserve.Server, path string) int {
				resp, err := http.Get("http://" + s.Listener.Addr().String() + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			node, admin := servers[0], servers[1]
			for path, want := range map[string][2]int{
				"/status":  {tc.nodeStatus, http.StatusOK},
				"/metrics": {tc.nodeStatus, http.StatusOK},
				"/healthz": {http.StatusOK, http.StatusOK},
			} {
				if got := [2]int{code(node, path), code(admin, path)}; got != want {
					t.Errorf("%s: node port %d, admin port %d; want %d, %d", path, got[0], got[1], want[0], want[1])
				}
			}
		})
	}
}

// Plain mcs with --admin-only serves /status and /metrics on
// --listen-admin alone, as mcs start does: the node listener answers
// /config/ and the probes, and 404 for them. Without --listen-admin it is
// refused.
func TestAdminOnly(t *testing.T) {
	in := start(t, "--dir", "../../fixtures/features/tang-advertisement-3.4", "--listen-plain", "127.0.0.1:0", "--listen-tls", "",
		"--listen-admin", "127.0.0.1:0", "--admin-only")
	var admin string
	waitFor(t, "the admin listener", func() bool {
		m := regexp.MustCompile(`listening on (http://\S+) \(admin`).FindStringSubmatch(in.stdout.String())
		if m != nil {
			admin = m[1]
		}
		return m != nil
	})
	waitFor(t, "ready", func() bool { c, _, _ := in.get("/readyz"); return c == 200 })
	for path, want := range map[string][2]int{"/status": {404, 200}, "/metrics": {404, 200}, "/config/worker": {200, 404}, "/readyz": {200, 200}} {
		node, _, _ := in.get(path)
		adm, _, _ := getWith(http.DefaultClient, admin+path)
		if [2]int{node, adm} != want {
			t.Errorf("%s: node listener %d, admin listener %d; want %d, %d", path, node, adm, want[0], want[1])
		}
	}
	err := run(context.Background(), []string{"--dir", "../../fixtures/features/tang-advertisement-3.4", "--listen-plain", "127.0.0.1:0", "--listen-tls", "", "--admin-only"}, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--admin-only needs --listen-admin") {
		t.Errorf("--admin-only without --listen-admin: %v", err)
	}
}

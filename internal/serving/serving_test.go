package serving

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source"
)

// The ceiling is the flags' when given, the newest for a directory, and
// nothing to say when the cluster cannot be reached (the source says why).
func TestMaxSpec(t *testing.T) {
	noCluster := func() (*rest.Config, error) { return nil, errors.New("no cluster") }
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"spec", Config{SpecGiven: true, Render: render.Options{Spec: convert.V3_2}}, "3.2.0 (--spec)"},
		{"max-spec", Config{MaxSpecGiven: true, Render: render.Options{MaxSpec: convert.V3_4}}, "3.4.0 (--max-spec)"},
		{"dir", Config{Source: "dir"}, convert.Newest.String() + " (the newest mcs writes; set --max-spec to the newest your oldest reader reads)"},
		{"kube unreachable", Config{Source: "kube", REST: noCluster}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro, said := tc.c.maxSpec(context.Background(), slog.New(slog.DiscardHandler))
			if said != tc.want || ro != tc.c.Render {
				t.Errorf("said %q, options %+v; want %q, %+v", said, ro, tc.want, tc.c.Render)
			}
		})
	}
}

// A directory setting naming nothing, or a file, is refused at start,
// named by its flag.
func TestNewSourceRefusesNoDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"none", Config{Source: "dir", Dir: "/nonexistent"}, "--dir /nonexistent: no such directory"},
		{"file", Config{Source: "dir", Dir: file}, "--dir " + file + ": not a directory"},
		{"bootstrap", Config{Bootstrap: &Bootstrap{BaseDir: "/nonexistent"}}, "--server-basedir /nonexistent: no such directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.c.newSource(render.Options{}, slog.New(slog.DiscardHandler), nil)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	src, err := (&Config{Source: "dir", Dir: t.TempDir()}).newSource(render.Options{}, slog.New(slog.DiscardHandler), nil)
	if _, ok := src.(*source.Dir); err != nil || !ok {
		t.Errorf("a directory: %T, %v", src, err)
	}
}

// Without a certificate the TLS listener is off, with a warning, unless
// asked for by name; with nothing left to listen on, Listen says so.
func TestListenWithoutCertificate(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	c := &Config{ListenTLS: "127.0.0.1:0", ListenPlain: "127.0.0.1:0"}
	servers, err := c.Listen(http.NotFoundHandler(), log, Listeners{})
	if err != nil || len(servers) != 1 || servers[0].TLS || !strings.Contains(logged.String(), "TLS listener off") {
		t.Fatalf("not asked: %v, %+v, logged %q", err, servers, logged.String())
	}
	servers[0].Listener.Close()
	c.TLSAsked = true
	if _, err := c.Listen(http.NotFoundHandler(), log, Listeners{}); err == nil || err.Error() != "--listen-tls needs --cert and --key" {
		t.Errorf("asked: %v", err)
	}
	c = &Config{ListenTLS: "127.0.0.1:0"}
	if _, err := c.Listen(http.NotFoundHandler(), log, Listeners{}); err == nil || !strings.HasPrefix(err.Error(), "no listener") {
		t.Errorf("nothing to listen on: %v", err)
	}
}

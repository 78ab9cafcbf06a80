package serve

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/rendertest"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
)

// result is rendertest.Result: a pool of one MachineConfig, 99-<pool>.
var result = rendertest.Result

const (
	plainIgn = rendertest.PlainIgn
	kargsIgn = rendertest.KargsIgn
	luksIgn  = `{"ignition":{"version":"3.4.0"},"storage":{"luks":[{"name":"data","device":"/dev/vdb","discard":true,"clevis":{"tpm2":true}}]}}`
	luks32   = `{"ignition":{"version":"3.2.0"},"storage":{"luks":[{"name":"data","device":"/dev/vdb","clevis":{"tpm2":true}}]}}`
)

func newTestServer(t testing.TB, cfg Config, results ...*render.Result) *Server {
	t.Helper()
	s := mustNew(t, cfg)
	snap, err := pipeline.BuildSnapshot(1, results, &render.ControllerConfig{KubeAPIServerServingCAData: []byte("-----BEGIN CERTIFICATE-----\nkubelet\n-----END CERTIFICATE-----\n")}, render.NodeFiles{Kubeconfig: []byte("apiVersion: v1\nkind: Config\n")})
	if err != nil {
		t.Fatal(err)
	}
	s.Swap(snap)
	return s
}

func get(t testing.TB, h http.Handler, method, target string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// servedVersion checks that a body parses as exactly the spec its
// Content-Type claims, and returns that spec.
func servedVersion(t testing.TB, w *httptest.ResponseRecorder) convert.Version {
	t.Helper()
	ct := w.Header().Get("Content-Type")
	_, vs, ok := strings.Cut(ct, ";version=")
	if !ok {
		t.Fatalf("Content-Type %q names no version", ct)
	}
	want, err := convert.ParseVersion(vs)
	if err != nil {
		t.Fatal(err)
	}
	var stub struct{ Ignition struct{ Version string } }
	if err := json.Unmarshal(w.Body.Bytes(), &stub); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	if stub.Ignition.Version != want.String() {
		t.Fatalf("body says version %s, Content-Type %s", stub.Ignition.Version, want)
	}
	p, err := convert.Parse(w.Body.Bytes())
	if err != nil {
		t.Fatalf("served body does not parse: %v", err)
	}
	if p.Version != want {
		t.Fatalf("parsed as %s, want %s", p.Version, want)
	}
	return want
}

// file returns the decoded contents of path in a served spec-3 body.
func file(t testing.TB, body []byte, path string) (string, bool) {
	t.Helper()
	p, err := convert.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p.Config.Storage.Files {
		if f.Path == path && f.Contents.Source != nil {
			return decodeDataURL(t, *f.Contents.Source), true
		}
	}
	return "", false
}

// metric is the value of the metric name with labels (name=value pairs)
// on s's registry; 0 when it has none.
func metric(t testing.TB, s *Server, name string, labels ...string) float64 {
	t.Helper()
	v, _ := testkit.Metric(t, s.cfg.Registry, name, labels...)
	return v
}

// mustNew is New, failing the test on a registration error.
func mustNew(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

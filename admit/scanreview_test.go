package admit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// jsonCases are bodies near every rule of JSON's grammar, both sides.
func jsonCases() []string {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deepObj := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	long := strings.Repeat("abcdefgh", 40)
	return []string{
		``, ` `, `null`, `nul`, `nullx`, `true`, `false`, `tru`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e`, `1e+`, `1E-7`, `-12.5e3`, `.5`, `+1`,
		`""`, `"`, `"\"`, `"\\"`, `"\/\b\f\n\r\t"`, `"\u00e9"`, `"\u00G9"`, `"\u12"`, `"\x"`, "\"a\tb\"", "\"a\x1fb\"", "\"\xff\xfe\"", `"é"`,
		`"` + long + `"`, `"` + long + `\n` + long + `"`, `"` + long, `"` + long + "\x01" + long + `"`, `"` + long + `\` + `"`,
		`{}`, `{ }`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":[1,2,{"b":null}]}`, `[1,]`, `[,1]`, `[1 2]`, `[]`, `[ ]`,
		` {"a" : [ true , false ] } `, `{"a":1}}`, `{"a":1}x`, `[`, `]`, `{`, `}`,
		deep(maxDepth), deep(maxDepth + 1), deepObj(maxDepth), deepObj(maxDepth + 1),
	}
}

// validJSON is json.Valid.
func TestValidJSONIsValid(t *testing.T) {
	for _, c := range jsonCases() {
		if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("validJSON(%.80q) = %v, json.Valid %v", c, got, want)
		}
	}
	// Every prefix of a review, and every byte of it replaced by each of
	// the characters that matter to the grammar.
	body := reviewBody(admissionv1.Create, "x", mcObject("a", kargs35), nil)
	for i := range len(body) + 1 {
		if got, want := validJSON(body[:i]), json.Valid(body[:i]); got != want {
			t.Errorf("prefix %d: validJSON %v, json.Valid %v", i, got, want)
		}
	}
	for i := range body {
		for _, c := range []byte("\"\\{}[],: \x01\x7f0a") {
			b := bytes.Clone(body)
			b[i] = c
			if got, want := validJSON(b), json.Valid(b); got != want {
				t.Errorf("byte %d as %q: validJSON %v, json.Valid %v", i, c, got, want)
			}
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range jsonCases() {
		if len(c) < 1000 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// reviewCases are AdmissionReview bodies: as the API server sends them,
// and otherwise in each way scanReview must leave to encoding/json.
func reviewCases() []string {
	create := string(reviewBody(admissionv1.Create, "system:admin", mcObject("a", kargs35), nil))
	update := string(reviewBody(admissionv1.Update, "x", mcObject("a", kargs35), mcObject("a", `{"ignition":{"version":"3.2.0"}}`)))
	swap := func(old, new string) string { return strings.Replace(create, old, new, 1) }
	return []string{
		create, update,
		strings.ReplaceAll(create, ",", " ,\n "),
		swap(`"kind":"AdmissionReview"`, `"Kind":"AdmissionReview"`),
		swap(`"kind":"AdmissionReview"`, `"kind":"AdmissionReview","kind":"X"`),
		swap(`"kind":"AdmissionReview"`, `"kind":"AdmissionReview","KIND":"X"`),
		swap(`"request":{`, `"request":{"ſubResource":"status",`),
		swap(`"request":{`, `"request":{"\u0073ubResource":"status",`),
		swap(`"request":{`, `"request":{"other":{"x":[1,2]},"né":1,`),
		swap(`"request":{`, `"request":{"dryRun":true,`),
		swap(`"request":{`, `"request":{"dryRun":null,`),
		swap(`"request":{`, `"request":{"dryRun":"yes",`),
		swap(`"uid":"req-1"`, `"uid":5`),
		swap(`"uid":"req-1"`, `"uid":"r\u0041\n"`),
		swap(`"uid":"req-1"`, "\"uid\":\"r\xff\""),
		swap(`"userInfo":{"username":"system:admin"}`, `"userInfo":{"Username":"system:admin"}`),
		swap(`"userInfo":{"username":"system:admin"}`, `"userInfo":null`),
		swap(`"userInfo":{"username":"system:admin"}`, `"userInfo":"system:admin"`),
		swap(`"userInfo":{"username":"system:admin"}`, `"userInfo":{"username":["system:admin"]}`),
		swap(`"operation":"CREATE"`, `"operation":true`),
		swap(`"uid":"req-1"`, `"uid":null`),
		swap(`"metadata":{`, `"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{}}}],`),
		swap(`"metadata":{`, `"metadata":{"managedFields":null,`),
		swap(`"metadata":{`, `"metadata":{"Name":"b",`),
		swap(`"metadata":{"name":"a"`, `"metadata":{"name":"a","name":"b"`),
		swap(`"spec":{"config":`, `"spec":{"config":null,"x":`),
		swap(`"spec":{"config":`, `"spec":{"Config":`),
		swap(`"spec":{"config":`, `"spec":"no","x":{"config":`),
		swap(`"metadata":{"name":"a","uid":"u-1"}`, `"metadata":null`),
		swap(`"resource":{`, `"resource":{"group":7,`),
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`,
		`{"kind":"AdmissionReview","request":{"uid":"a"},"request":{"name":"b"}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a","object":null}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a","object":[1]}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":"x"}`,
		`{"apiVersion":1}`, `[]`, `null`, `{}`, `{"request":{"object":{"spec":{"config":{"a":1}}}}}`, create[:len(create)-1],
	}
}

// scanReview, where it answers, answers what json.Unmarshal does; it
// answers the reviews the API server sends.
func TestScanReviewIsUnmarshal(t *testing.T) {
	cases := reviewCases()
	for i, c := range cases {
		if i > 0 && c == cases[0] {
			t.Errorf("case %d is the first: its change did not apply", i)
		}
		got, ok := scanReview([]byte(c))
		if i < 3 && !ok {
			t.Errorf("case %d: a review as the API server sends it not scanned: %.200s", i, c)
		}
		checkScanned(t, []byte(c), got, ok)
	}
}

func FuzzScanReview(f *testing.F) {
	for _, c := range reviewCases() {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := scanReview(body)
		checkScanned(t, body, got, ok)
	})
}

func checkScanned(t *testing.T, body []byte, got reviewIn, ok bool) {
	t.Helper()
	if !ok {
		return
	}
	var want reviewIn
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("scanned %.200q, which json.Unmarshal refuses: %v", body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scanned %.200q as\n%+v\njson.Unmarshal:\n%+v", body, got, want)
	}
}

// The raw values scanReview takes are copies: a slice of the body would
// keep all of it alive (a 4 MB annotation beside a config of a few bytes)
// in the lowering cache, which counts only the config's bytes.
func TestScanReviewCopiesRaw(t *testing.T) {
	body := []byte(reviewBody(admissionv1.Create, "x", []byte(`{"metadata":{"name":"a","managedFields":[{"manager":"m"}]},"spec":{"config":{}}}`), nil))
	in, ok := scanReview(body)
	if !ok {
		t.Fatal("not scanned")
	}
	cfg, mf := string(in.Request.Object.Spec.Config), string(in.Request.Object.Metadata.ManagedFields)
	for i := range body {
		body[i] = ' '
	}
	if got := string(in.Request.Object.Spec.Config); got != cfg || got != "{}" {
		t.Errorf("config %q after the body changed, want {}", got)
	}
	if got := string(in.Request.Object.Metadata.ManagedFields); got != mf || got != `[{"manager":"m"}]` {
		t.Errorf("managedFields %q after the body changed", got)
	}
}

// BenchmarkDecodeReview is the decode of a review of a 170 KB config (a
// rendered config's size, mostly data URLs), by decodeReview and by
// encoding/json as it decoded reviews before.
func BenchmarkDecodeReview(b *testing.B) {
	var files []string
	for i := range 40 {
		files = append(files, `{"path":"/etc/f`+strings.Repeat("x", i)+`","contents":{"source":"data:;base64,`+strings.Repeat("QUJD", 1060)+`"},"mode":420}`)
	}
	body := reviewBody(admissionv1.Create, "x", mcObject("a", `{"ignition":{"version":"3.5.0"},"storage":{"files":[`+strings.Join(files, ",")+`]}}`), nil)
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for range b.N {
			if _, err := decodeReview(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for range b.N {
			var in reviewIn
			if err := json.Unmarshal(body, &in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

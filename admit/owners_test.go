package admit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/internal/shareddata"
)

func TestChangedFields(t *testing.T) {
	for _, c := range []struct {
		name, sent, stored, want string
	}{
		{"version", `{"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core"}]}}`,
			`{"passwd":{"users":[{"name":"core"}]},"ignition":{"version":"3.0.0"}}`,
			`{"spec":{"config":{"ignition":{"version":null}}}}`},
		{"empty members dropped", `{"ignition":{"config":{},"version":"3.5.0"},"storage":{},"systemd":{"units":[]}}`,
			`{"ignition":{"version":"3.0.0"}}`,
			`{"spec":{"config":{"ignition":{"config":null,"version":null},"storage":null,"systemd":null}}}`},
		{"lists whole", `{"storage":{"files":[{"path":"/a","contents":{"verification":{}}},{"path":"/b"}]}}`,
			`{"storage":{"files":[{"path":"/a"},{"path":"/b"}]}}`,
			`{"spec":{"config":{"storage":{"files":null}}}}`},
		{"members in another order, escapes", `{"storage":{"files":[{"path":"/a<b","mode":420,"contents":{"source":"data:,x"}}]}}`,
			`{"storage":{"files":[{"contents":{"source":"data:,x"},"mode":420,"path":"/a\u003cb"}]}}`,
			`{"spec":{"config":{}}}`},
		{"a member added", `{"ignition":{"version":"3.1.0"}}`, `{"ignition":{"version":"3.1.0"},"storage":{}}`,
			`{"spec":{"config":{"storage":null}}}`},
		{"an object for a value", `{"a":{"b":1}}`, `{"a":1}`, `{"spec":{"config":{"a":null}}}`},
		{"not an object", `{"a":1}`, `[]`, `{"spec":{"config":null}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := json.Marshal(changedFields([]byte(c.sent), []byte(c.stored)).fields)
			if string(got) != c.want {
				t.Errorf("changed %s, want %s", got, c.want)
			}
		})
	}
}

// managedFields of a MachineConfig: an applier owning all it sent, an
// updater owning the version and spec.config.ignition itself (as updaters
// own objects: "."), one owning spec.config itself (kept: a member's
// change is not its object's), an entry for the status, one of another
// type.
const testManagedFields = `[
{"manager":"argocd","operation":"Apply","apiVersion":"machineconfiguration.openshift.io/v1","time":"2026-12-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:role":{}}},"f:spec":{"f:config":{"f:ignition":{"f:version":{}},"f:passwd":{"f:users":{}},"f:storage":{},"f:systemd":{"f:units":{}}}}}},
{"manager":"kubectl-edit","operation":"Update","apiVersion":"machineconfiguration.openshift.io/v1","time":"2026-12-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:config":{"f:ignition":{".":{},"f:version":{}}}}}},
{"manager":"whole","operation":"Update","apiVersion":"machineconfiguration.openshift.io/v1","time":"2026-12-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:config":{}}}},
{"manager":"status","operation":"Update","subresource":"status","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:x":{}}}},
{"manager":"other","operation":"Update","fieldsType":"FieldsV2","fieldsV1":{"f:spec":{"f:config":{"f:ignition":{"f:version":{}}}}}}
]`

func TestUnown(t *testing.T) {
	tree := changedFields([]byte(`{"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core"}]},"storage":{}}`),
		[]byte(`{"ignition":{"version":"3.0.0"},"passwd":{"users":[{"name":"core"}]}}`))
	kept, ops := unown(decodeValue([]byte(testManagedFields)), tree.fields)
	want := `[
{"manager":"argocd","operation":"Apply","apiVersion":"machineconfiguration.openshift.io/v1","time":"2026-12-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:role":{}}},"f:spec":{"f:config":{"f:passwd":{"f:users":{}},"f:systemd":{"f:units":{}}}}}},
{"manager":"kubectl-edit","operation":"Update","apiVersion":"machineconfiguration.openshift.io/v1","time":"2026-12-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:config":{"f:ignition":{}}}}},
{"manager":"whole","operation":"Update","apiVersion":"machineconfiguration.openshift.io/v1","time":"2026-12-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:config":{}}}},
{"manager":"status","operation":"Update","subresource":"status","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:x":{}}}},
{"manager":"other","operation":"Update","fieldsType":"FieldsV2","fieldsV1":{"f:spec":{"f:config":{"f:ignition":{"f:version":{}}}}}}
]`
	if !reflect.DeepEqual(kept, decodeValue([]byte(want))) {
		got, _ := json.Marshal(kept)
		t.Errorf("kept %s\nwant %s", got, want)
	}
	// The operations do the same to the object, applied by the API
	// server's own JSON patch.
	obj := `{"metadata":{"name":"x","managedFields":` + testManagedFields + `}}`
	patch := "[" + strings.Join(ops, ",") + "]"
	out, err := applyPatch([]byte(obj), []byte(patch))
	if err != nil {
		t.Fatalf("applying %s: %v", patch, err)
	}
	if wantObj := `{"metadata":{"name":"x","managedFields":` + want + `}}`; !reflect.DeepEqual(decodeValue(out), decodeValue([]byte(wantObj))) {
		t.Errorf("patched to %s\nwant %s", out, wantObj)
	}
	if len(ops) != 4 {
		t.Errorf("%d operations %s, want 4: two of argocd's (ignition, left empty, and storage), two of kubectl-edit's (the version, and \".\" to leave {})", len(ops), patch)
	}
}

// TestReviewUnowns is a create and the re-applies after it as the API
// server sends them: the patch takes what the rewrite changed out of the
// managers' entries; the same manager's re-apply is restored to the stored
// object (nothing written); another's keeps its new entry, unowned alike.
func TestReviewUnowns(t *testing.T) {
	w := New(Config{})
	w.SetCeiling(Ceiling{Source: "test"})
	const sent = `{"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core"}]},"storage":{}}`
	const stored = `{"ignition":{"version":"3.0.0"},"passwd":{"users":[{"name":"core"}]}}`
	const applied = `{"f:spec":{"f:config":{"f:ignition":{"f:version":{}},"f:passwd":{"f:users":{}},"f:storage":{}}}}`
	const unowned = `{"f:spec":{"f:config":{"f:passwd":{"f:users":{}}}}}`
	entry := func(manager, time, fields string) string {
		return `{"apiVersion":"machineconfiguration.openshift.io/v1","fieldsType":"FieldsV1","fieldsV1":` + fields + `,"manager":"` + manager + `","operation":"Apply","time":"` + time + `"}`
	}
	object := func(config string, entries ...string) []byte {
		return []byte(`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"m","managedFields":[` + strings.Join(entries, ",") + `]},"spec":{"config":` + config + `}}`)
	}
	admitted := func(t *testing.T, op admissionv1.Operation, obj, old []byte) []byte {
		t.Helper()
		_, resp := post(t, w, reviewBody(op, "alice", obj, old))
		out, err := applyPatch(obj, resp.Patch)
		if err != nil {
			t.Fatalf("applying %s: %v", resp.Patch, err)
		}
		return out
	}
	created := admitted(t, admissionv1.Create, object(sent, entry("a", "2026-12-01T00:00:00Z", applied)), nil)
	want := object(stored, entry("a", "2026-12-01T00:00:00Z", unowned))
	if !reflect.DeepEqual(decodeValue(created), decodeValue(want)) {
		t.Fatalf("created %s\nwant %s", created, want)
	}
	again := admitted(t, admissionv1.Update, object(sent, entry("a", "2026-12-01T00:00:09Z", applied)), created)
	if !reflect.DeepEqual(decodeValue(again), decodeValue(created)) {
		t.Errorf("re-applied %s\nwant as stored %s", again, created)
	}
	other := admitted(t, admissionv1.Update, object(sent, entry("a", "2026-12-01T00:00:00Z", unowned), entry("b", "2026-12-01T00:00:09Z", applied)), created)
	want = object(stored, entry("a", "2026-12-01T00:00:00Z", unowned), entry("b", "2026-12-01T00:00:09Z", unowned))
	if !reflect.DeepEqual(decodeValue(other), decodeValue(want)) {
		t.Errorf("another manager's apply %s\nwant %s", other, want)
	}
	// An object stored before ownership was taken out (by an older
	// webhook): the re-apply writes it unowned, once.
	legacy := object(stored, entry("a", "2026-12-01T00:00:00Z", applied))
	healed := admitted(t, admissionv1.Update, object(sent, entry("a", "2026-12-01T00:00:09Z", applied)), legacy)
	if want := object(stored, entry("a", "2026-12-01T00:00:09Z", unowned)); !reflect.DeepEqual(decodeValue(healed), decodeValue(want)) {
		t.Errorf("re-applied over an older webhook's %s\nwant %s", healed, want)
	}
}

func TestSameJSON(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{`{"a":1,"b":[1,"x"]}`, ` { "b" : [ 1 , "x" ] , "a" : 1 } `, true},
		{`"a<b"`, `"a\u003cb"`, true},
		{`{"a":{}}`, `{"a":{},"b":null}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`1`, `1.0`, false}, // as written: takes them as changed, owned by no one
		{`{"a":1,"a":1}`, `{"a":1,"b":1}`, false},
		{`{"a":1}`, `{"a":1`, false},
		{``, ``, false},
	} {
		if got := sameJSON([]byte(c.a), []byte(c.b)); got != c.same {
			t.Errorf("sameJSON(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

// FuzzSameJSON: sameJSON never takes two different values for the same
// one (a field left owned at a value not applied), takes a value for the
// same as its re-encoding (members sorted), and reads anything without a
// panic.
func FuzzSameJSON(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"c"}],"d":null}`), []byte(`{"d":null,"a":[1,{"b":"c"}]}`))
	f.Add([]byte(`"\u00e9"`), []byte(`"é"`))
	f.Add([]byte(`{"a":`), []byte(`[}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		same := sameJSON(a, b)
		if !json.Valid(a) || !json.Valid(b) {
			return
		}
		va, vb := decodeValue(a), decodeValue(b)
		if same && !reflect.DeepEqual(va, vb) {
			t.Errorf("sameJSON(%s, %s), values differ", a, b)
		}
		canon, err := json.Marshal(va)
		if err != nil {
			t.Fatal(err)
		}
		if !hasDuplicateNames(a) && !sameJSON(a, canon) {
			t.Errorf("sameJSON(%s, %s) false: the same value", a, canon)
		}
		if _, ok := diffObjects(a, canon, "", &configDiff{}); !ok && isObject(bytes.TrimSpace(a)) {
			t.Errorf("diffObjects cannot read %s", a)
		}
	})
}

// hasDuplicateNames reports whether an object in JSON text v has a member
// name twice (decoded, the last is kept).
func hasDuplicateNames(v []byte) bool {
	d := json.NewDecoder(bytes.NewReader(v))
	type object struct {
		names map[string]bool
		name  bool // the next string is a name
	}
	var stack []*object
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok {
		case json.Delim('{'):
			if top != nil {
				top.name = true
			}
			stack = append(stack, &object{names: map[string]bool{}, name: true})
			continue
		case json.Delim('['):
			if top != nil {
				top.name = true
			}
			stack = append(stack, nil)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			continue
		}
		if top == nil {
			continue
		}
		if s, ok := tok.(string); ok && top.name {
			if top.names[s] {
				return true
			}
			top.names[s] = true
			top.name = false
			continue
		}
		top.name = true
	}
}

// BenchmarkChangedFields is what a review of the largest rendered config
// of the real data adds to find the fields its rewrite changed: the
// config as the API server sends it (members sorted) against the lowered
// one (members in the spec's order), and, for comparison, the two decoded
// by encoding/json.
func BenchmarkChangedFields(b *testing.B) {
	_, mc := servetest.OpenShiftRendered(b, servetest.Load(b, shareddata.Path(b, "realdata", "aws")), "master")
	var o struct{ Spec struct{ Config any } }
	if err := json.Unmarshal(mc, &o); err != nil {
		b.Fatal(err)
	}
	sent, _ := json.Marshal(o.Spec.Config) // as the API server encodes it
	res, err := Lower(sent, convert.Version{})
	if err != nil || !res.Changed() {
		b.Fatal(err)
	}
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(sent)))
		for b.Loop() {
			changedFields(sent, res.Config)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(sent)))
		for b.Loop() {
			reflect.DeepEqual(decodeValue(sent), decodeValue(res.Config))
		}
	})
}

package convert

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	t30 "github.com/coreos/ignition/v2/config/v3_0/types"
	t31 "github.com/coreos/ignition/v2/config/v3_1/types"
	t32 "github.com/coreos/ignition/v2/config/v3_2/types"
	t33 "github.com/coreos/ignition/v2/config/v3_3/types"
	t34 "github.com/coreos/ignition/v2/config/v3_4/types"
	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	t36 "github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/coreos/vcontext/path"
	"github.com/coreos/vcontext/report"
)

// dataURLs are sources Ignition accepts and refuses.
var dataURLs = []string{
	"data:,", "data:,x", "data:;base64,aGk=", "data:;base64,!!", "data:%", "data:,<&>", "data:,a b",
	"data:text/plain;charset=utf-8,a%20b", "data:,%zz", "data:,%2", "data:", "data:x", "data:;base64,aGk",
	"data:,\x7f", "data:,h\u00e9", "data:application/octet-stream;base64,AAAA====",
}

// TestSourceValidInEverySpec holds what Hold's single check of a data URL
// rests on: every spec 3 version's own validation accepts and refuses the
// same data URLs.
func TestSourceValidInEverySpec(t *testing.T) {
	validators := map[Version]func(s string) report.Report{
		V3_0: func(s string) report.Report { return t30.FileContents{Source: &s}.Validate(path.New("json")) },
		V3_1: func(s string) report.Report { return t31.Resource{Source: &s}.Validate(path.New("json")) },
		V3_2: func(s string) report.Report { return t32.Resource{Source: &s}.Validate(path.New("json")) },
		V3_3: func(s string) report.Report { return t33.Resource{Source: &s}.Validate(path.New("json")) },
		V3_4: func(s string) report.Report { return t34.Resource{Source: &s}.Validate(path.New("json")) },
		V3_5: func(s string) report.Report { return t35.Resource{Source: &s}.Validate(path.New("json")) },
		V3_6: func(s string) report.Report { return t36.Resource{Source: &s}.Validate(path.New("json")) },
	}
	for _, v := range OutputVersions {
		if _, ok := validators[v]; !ok && v.Major == 3 {
			t.Fatalf("no validator of spec %s", v)
		}
	}
	refused := 0
	for _, s := range dataURLs {
		want := sourceValid(s)
		if !want {
			refused++
		}
		for v, validate := range validators {
			if got := !validate(s).IsFatal(); got != want {
				t.Errorf("spec %s: %q valid %v, Hold's check says %v", v, s, got, want)
			}
		}
	}
	if refused == 0 || refused == len(dataURLs) {
		t.Fatalf("%d of %d refused: the cases do not tell the specs apart", refused, len(dataURLs))
	}
}

// TestHold holds what it can and nothing it should not.
func TestHold(t *testing.T) {
	big := "data:," + strings.Repeat("x", 600)
	for _, c := range []struct {
		name, raw string
		held      int // distinct contents held; -1: not held
	}{
		{"contents and append", `{"storage":{"files":[{"path":"/a","contents":{"source":"` + big + `"},"append":[{"source":"` + big + `"}]}]}}`, 1},
		{"two contents", `{"storage":{"files":[{"contents":{"source":"` + big + `"}},{"contents":{"source":"` + big + `y"}}]}}`, 2},
		{"small", `{"storage":{"files":[{"contents":{"source":"data:,x"}}]}}`, -1},
		{"not a data URL", `{"storage":{"files":[{"contents":{"source":"https://` + strings.Repeat("x", 600) + `"}}]}}`, -1},
		{"refused by Ignition", `{"storage":{"files":[{"contents":{"source":"data:;base64,!` + strings.Repeat("x", 600) + `"}}]}}`, -1},
		{"escaped: left, the rest held", `{"storage":{"files":[{"contents":{"source":"data:,\u0041` + strings.Repeat("x", 600) + `"}},{"contents":{"source":"` + big + `"}}]}}`, 1},
		{"elsewhere: a unit", `{"systemd":{"units":[{"name":"a.service","contents":"` + big + `"}]}}`, -1},
		{"elsewhere: a CA", `{"ignition":{"security":{"tls":{"certificateAuthorities":[{"source":"` + big + `"}]}}}}`, -1},
		{"case folded keys", `{"Storage":{"files":[{"contents":{"source":"` + big + `"}}]},"storage":{"Files":[{"contents":{"Source":"` + big + `"}}]}}`, -1},
		{"nulls", `{"storage":{"files":[{"contents":null,"append":null},{"contents":{"source":"` + big + `"}}],"links":null}}`, 1},
		{"files null", `{"storage":{"files":null}}`, -1},
		{"not JSON", `{"storage":{"files":[{"contents":{"source":"` + big + `"}}`, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, ok := Hold([]byte(c.raw), nil, MinHeld)
			if !ok {
				if c.held >= 0 {
					t.Fatalf("not held, want %d", c.held)
				}
				return
			}
			if c.held < 0 || len(h.orig) != c.held {
				t.Fatalf("held %d, want %d: %s", len(h.orig), c.held, h.JSON)
			}
			back, ok := h.Restore(h.JSON)
			if !ok || !sameJSONValue(t, back, []byte(c.raw)) {
				t.Fatalf("restored %s", back)
			}
		})
	}
}

// TestHoldLeftover: a token the writer lost is reported, never served.
func TestHoldLeftover(t *testing.T) {
	big := "data:," + strings.Repeat("x", 600)
	h, ok := Hold([]byte(`{"storage":{"files":[{"contents":{"source":"`+big+`"}}]}}`), &ValidItems{}, MinHeld)
	if !ok {
		t.Fatal("not held")
	}
	if _, ok := h.Restore(bytes.Replace(h.JSON, []byte(`"}}]}}`), []byte(`x"}}]}}`), 1)); ok {
		t.Error("a changed token was taken as restored")
	}
}

func sameJSONValue(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(va, vb)
}

// FuzzHold: whatever the bytes, Hold holds only where the config with
// its contents put back is the same JSON value, and the held config is
// valid JSON exactly where the input is.
func FuzzHold(f *testing.F) {
	f.Add([]byte(`{"storage":{"files":[{"path":"/a","contents":{"source":"data:,xyz"},"append":[{"source":"data:,xyz"}]}]}}`))
	f.Add([]byte(`{"storage":{"files":[{"contents":{"source":"data:,a\"b"}},{"contents":{"source":"data:;base64,aGk="}}]},"storage":{}}`))
	f.Add([]byte(`{"storage":{"files":[{"contents":{"source":"data:,x"}}]}} {`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		h, ok := Hold(raw, nil, 1)
		if !ok {
			return
		}
		if json.Valid(raw) != json.Valid(h.JSON) {
			t.Fatalf("valid %v, held valid %v: %s → %s", json.Valid(raw), json.Valid(h.JSON), raw, h.JSON)
		}
		back, ok := h.Restore(h.JSON)
		if !ok {
			t.Fatalf("not restored: %s", h.JSON)
		}
		if json.Valid(raw) && !sameJSONValue(t, back, raw) {
			t.Fatalf("restored %s from %s", back, raw)
		}
	})
}

// TestQuoted: what Restore writes of a held content is Marshal's string,
// for every byte a held content may have.
func TestQuoted(t *testing.T) {
	for c := 0x20; c < 0x80; c++ {
		if c == '"' || c == '\\' {
			continue
		}
		o := []byte("data:," + string(rune(c)) + "x")
		m, _ := Marshal(string(o), false)
		if got := quoted(o); string(got) != string(m[:len(m)-1]) {
			t.Errorf("%q: quoted %s, Marshal %s", o, got, m)
		}
	}
}

// TestHeldTokenAfterForget: a Forget while a config is being held (other
// reviews share the ValidItems) renumbers contents; the Hold under way must
// not number a second content as its first (both would be restored as one),
// so it holds nothing.
func TestHeldTokenAfterForget(t *testing.T) {
	v := &ValidItems{}
	x, z := []byte("data:,"+strings.Repeat("x", 600)), []byte("data:,"+strings.Repeat("z", 600))
	lead := v.heldLead()
	if n, ok := v.heldToken(lead, itemKey(sha256.Sum256(x)), x, 0); !ok || n != 0 {
		t.Fatalf("first content: %d %v", n, ok)
	}
	v.Forget(0)
	if n, ok := v.heldToken(lead, itemKey(sha256.Sum256(z)), z, 1); ok {
		t.Fatalf("after a Forget, a second content got number %d under the old lead", n)
	}
	raw := []byte(`{"storage":{"files":[{"contents":{"source":"` + string(x) + `"}},{"contents":{"source":"` + string(z) + `"}}]}}`)
	h, ok := Hold(raw, v, MinHeld)
	if !ok || len(h.orig) != 2 || h.lead == lead {
		t.Fatalf("a Hold after the Forget: %v, %d contents, lead renewed %v", ok, len(h.orig), h.lead != lead)
	}
	if back, ok := h.Restore(h.JSON); !ok || !sameJSONValue(t, back, raw) {
		t.Fatalf("restored %s", back)
	}
}

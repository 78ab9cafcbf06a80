package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// quickVersion's cases: found as the stub's decoding finds it, or not
// found (Parse then decodes).
func TestQuickVersion(t *testing.T) {
	for _, c := range []struct {
		name, json, want string
		ok               bool
	}{
		{"plain", `{"ignition":{"version":"3.5.0"}}`, "3.5.0", true},
		{"spaced, after other members", ` { "storage" : {"files":[{"path":"/a","contents":{"source":"data:,{\"ignition\":{\"version\":\"9\"}}"}}]}, "ignition" : { "config":{}, "version" : "3.2.0" } } `, "3.2.0", true},
		{"the last of two", `{"ignition":{"version":"3.1.0","version":"3.4.0"}}`, "3.4.0", true},
		{"numbers and literals", `{"a":1,"b":true,"c":null,"d":[1,{"e":"]"}],"ignition":{"version":"3.0.0"}}`, "3.0.0", true},
		{"no version", `{"ignition":{}}`, "", false},
		{"ignition twice", `{"ignition":{"version":"3.5.0"},"ignition":{}}`, "", false},
		{"key in another case", `{"Ignition":{"version":"3.5.0"}}`, "", false},
		{"version in another case", `{"ignition":{"version":"3.5.0","VERSION":"3.2.0"}}`, "", false},
		{"escaped key", `{"ign\u0069tion":{"version":"3.5.0"}}`, "", false},
		{"escaped version", `{"ignition":{"version":"3.5\u002e0"}}`, "", false},
		{"version a number", `{"ignition":{"version":3.5}}`, "", false},
		{"not an object", `["ignition"]`, "", false},
		{"cut short", `{"ignition":{"version":"3.5.0"`, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := quickVersion([]byte(c.json))
			if got != c.want && ok || ok != c.ok {
				t.Errorf("quickVersion = %q, %v; want %q, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

// FuzzQuickVersion: where quickVersion finds a version in valid JSON, the
// stub Parse decodes finds the same.
func FuzzQuickVersion(f *testing.F) {
	for _, s := range []string{`{"ignition":{"version":"3.5.0"}}`, `{"a":[1,"x"],"ignition":{"version":"3.2.0"},"b":{}}`, `{"ignition":{"version":"3.1.0","version":"3.4.0"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, ok := quickVersion(raw)
		if !ok || !json.Valid(raw) {
			return
		}
		var stub struct {
			Ignition struct {
				Version *string `json:"version"`
			} `json:"ignition"`
		}
		if err := json.Unmarshal(raw, &stub); err != nil || stub.Ignition.Version == nil || *stub.Ignition.Version != v {
			t.Fatalf("quickVersion %q; the stub: %v %v", v, stub.Ignition.Version, err)
		}
	})
}

// FuzzParseQuick: Parse with quickVersion's way first reads every config
// as without it: the same config and spec, or the same error.
func FuzzParseQuick(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := parse(raw, true, true)
		q, qerr := parse(raw, true, false)
		switch {
		case (err == nil) != (qerr == nil):
			t.Fatalf("with the scan: %v; without: %v", err, qerr)
		case err != nil:
			// Ignition reports unknown keys in map order: compare as sets.
			if !slices.Equal(sortedParts(err), sortedParts(qerr)) {
				t.Fatalf("with the scan: %v; without: %v", err, qerr)
			}
		case p.Version != q.Version || len(diff(p.Config, q.Config)) > 0 || len(p.Warnings) != len(q.Warnings):
			t.Fatalf("with the scan %s, without %s: %v", p.Version, q.Version, diff(p.Config, q.Config))
		}
	})
}

// sortedParts is an error's text, an InvalidError's problems each apart,
// in order.
func sortedParts(err error) []string {
	var ie *InvalidError
	if !errors.As(err, &ie) {
		return []string{err.Error()}
	}
	parts := []string{ie.Version.String()}
	for _, p := range ie.Problems {
		parts = append(parts, fmt.Sprintf("%+v", p))
	}
	slices.Sort(parts)
	return parts
}

// plainByByte is plainASCII a byte at a time.
func plainByByte(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

// TestPlainASCII puts every byte at every place of a word, and across.
func TestPlainASCII(t *testing.T) {
	for n := range 20 {
		for at := range n {
			for c := range 256 {
				b := bytes.Repeat([]byte("a"), n)
				b[at] = byte(c)
				if got, want := plainASCII(b), plainByByte(b); got != want {
					t.Fatalf("%q: %v, want %v", b, got, want)
				}
			}
		}
	}
}

func FuzzPlainASCII(f *testing.F) {
	f.Add([]byte("data:,abc%20def"))
	f.Add([]byte("abcdefgh\\ijklmnop"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := plainASCII(b), plainByByte(b); got != want {
			t.Fatalf("%q: %v, want %v", b, got, want)
		}
	})
}

package text

import "testing"

func TestVerbS(t *testing.T) {
	for what, want := range map[string]string{"a file": "s", "files": "", "the address": "s", "kernel arguments": ""} {
		if got := VerbS(what); got != want {
			t.Errorf("VerbS(%q) = %q, want %q", what, got, want)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		n       int
		want    string
	}{
		{"short", "abc", 3, "abc"},
		{"cut", "abcdef", 3, "abc…"},
		{"inside a character", "ab€def", 3, "ab…"},
		{"nothing left", "€", 0, "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Truncate(tc.s, tc.n, "…"); got != tc.want {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
		})
	}
}

package convert

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []any
	}{
		{"$", nil},
		{"$.storage.files.3.mode", []any{"storage", "files", 3, "mode"}},
		{"$.kernelArguments.shouldExist", []any{"kernelArguments", "shouldExist"}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			p := ParsePath(tc.in)
			if !slices.Equal(p.Path, tc.want) || p.String() != tc.in || p.IsZero() {
				t.Errorf("ParsePath(%q) = %#v, %q", tc.in, p.Path, p)
			}
			js, err := json.Marshal(p)
			var back Path
			if err == nil {
				err = json.Unmarshal(js, &back)
			}
			if err != nil || string(js) != `"`+tc.in+`"` || back.String() != tc.in {
				t.Errorf("JSON %s, back %q: %v", js, back, err)
			}
		})
	}
	t.Run("no path", func(t *testing.T) {
		var p Path
		if !p.IsZero() || p.String() != "" || NewPath().IsZero() || NewPath().String() != "$" {
			t.Errorf("zero %q, root %q", p, NewPath())
		}
	})
	t.Run("append shares nothing", func(t *testing.T) {
		base := NewPath("storage", "files").Append(0)
		a, b := base.Append("mode"), base.Append("path")
		if a.String() != "$.storage.files.0.mode" || b.String() != "$.storage.files.0.path" || base.String() != "$.storage.files.0" {
			t.Errorf("%s %s %s", a, b, base)
		}
	})
}

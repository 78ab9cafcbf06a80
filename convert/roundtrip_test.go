package convert

import (
	"errors"
	"testing"
)

// Every fixture, translated to every spec from its MinVersion up (and to
// 2.2 when 3.0 is enough), marshalled and parsed again as that spec, is the
// config it was. Below its MinVersion, Translate refuses it.
func TestRoundTrip(t *testing.T) {
	for _, fx := range fixtures(t) {
		p := mustParse(t, fx.name, fx.raw)
		min, reasons := MinVersion(&p.Config)
		for _, v := range OutputVersions {
			t.Run(fx.name+"@"+v.String(), func(t *testing.T) {
				blocked := ReasonsAbove(reasons, v)
				if v == V2_2 {
					blocked = append(blocked, spec2Blockers(&p.Config)...)
				}
				typed, err := Translate(&p.Config, v)
				if len(blocked) > 0 {
					var ce *CannotExpressError
					if !errors.As(err, &ce) || len(ce.Reasons) != len(blocked) {
						t.Fatalf("MinVersion %s: Translate = %v, want a CannotExpressError with %d reasons", min, err, len(blocked))
					}
					return
				}
				if err != nil {
					t.Fatalf("MinVersion %s: Translate: %v", min, err)
				}
				forms := []bool{false, true}
				if len(fx.raw) > 16<<10 {
					forms = forms[:1] // pretty adds only whitespace; spare -race the big ones
				}
				for _, pretty := range forms {
					b, err := Marshal(typed, pretty)
					if err != nil {
						t.Fatal(err)
					}
					back, err := Parse(b)
					if err != nil {
						t.Fatalf("Parse(output, pretty=%v): %v\n%s", pretty, err, b)
					}
					if back.Version != v {
						t.Errorf("output declares %s, want %s", back.Version, v)
					}
					want, got := normalVersion(p.Config), normalVersion(back.Config)
					if v == V2_2 {
						want, got = spec2Equivalent(want), spec2Equivalent(got)
					}
					if d := diff(want, got); len(d) > 0 {
						t.Errorf("round trip through %s (pretty=%v) differs: %v", v, pretty, d)
					}
				}
			})
		}
	}
}

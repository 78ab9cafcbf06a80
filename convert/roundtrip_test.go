package convert

import (
	"errors"
	"testing"
)

// Every fixture, translated to every spec from its MinVersion up (and to
// 2.2 when 3.0 is enough), marshalled and parsed again as that spec, is the
// config it was. Below its MinVersion, translate refuses it.
func TestRoundTrip(t *testing.T) {
	for _, fx := range fixtures(t) {
		p := mustParse(t, fx.name, fx.raw)
		min, reasons := minVersion(&p.Config)
		for _, v := range OutputVersions {
			t.Run(fx.name+"@"+v.String(), func(t *testing.T) {
				blocked := ReasonsAbove(reasons, v)
				if v == V2_2 {
					blocked = append(blocked, spec2Blockers(&p.Config)...)
				}
				typed, err := translateTo(&p.Config, v)
				if len(blocked) > 0 {
					var ce *CannotExpressError
					if !errors.As(err, &ce) || len(ce.Reasons) != len(blocked) {
						t.Fatalf("MinVersion %s: translate = %v, want a CannotExpressError with %d reasons", min, err, len(blocked))
					}
					return
				}
				if err != nil {
					t.Fatalf("MinVersion %s: translate: %v", min, err)
				}
				forms := []bool{false, true}
				if len(fx.raw) > 16<<10 {
					forms = forms[:1] // pretty adds only whitespace; spare -race the big ones
				}
				for _, pretty := range forms {
					readsBack(t, typed, p.Config, v, pretty)
				}
			})
		}
	}
}

// translateTo is what the encoder does for one spec: cfg at target, proved
// lossless and valid.
func translateTo(cfg *Config, target Version) (any, error) {
	_, reasons := minVersion(cfg)
	return translate(cfg, target, reasons, nil, nil)
}

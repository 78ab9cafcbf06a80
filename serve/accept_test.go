package serve

import (
	"testing"

	"github.com/ignition-mcs/mcs/convert"
)

func FuzzNegotiate(f *testing.F) {
	for _, h := range []string{hdr36, hdr35, hdr34, hdr32, hdrSpec2, hdrRHCOS, "", "*/*", "text/plain",
		`application/vnd.coreos.ignition+json;version="3.4.0";q=0.5`, "a/b;;;,,,;q=", `x/y;version="\"`} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		w := negotiate(h)
		switch w.kind {
		case wantSpec3:
			if w.max.Major != 3 {
				t.Fatalf("%q: spec-3 want with max %s", h, w.max)
			}
		case wantDefault, wantSpec2, wantNone:
		default:
			t.Fatalf("%q: kind %d", h, w.kind)
		}
		if !w.asked.IsZero() && w.asked.Major != 2 && w.asked.Major != 3 && w.kind != wantNone && w.kind != wantDefault {
			t.Fatalf("%q: asked %s", h, w.asked)
		}
	})
}

func TestAskedVersion(t *testing.T) {
	for h, want := range map[string]convert.Version{
		hdr36:    convert.V3_6,
		hdrSpec2: convert.V2_2,
		"application/vnd.coreos.ignition+json;version=3.6.0;q=0, application/vnd.coreos.ignition+json;version=3.1.0": convert.V3_1,
		"*/*": {},
	} {
		if got := negotiate(h).asked; got != want {
			t.Errorf("%q: asked %s, want %s", h, got, want)
		}
	}
}

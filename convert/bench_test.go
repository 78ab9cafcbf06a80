package convert

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// bigConfig builds a config of at least size bytes from the OpenShift worker
// configs under testdata (a worker's whole MachineConfig set), repeated with
// every file and unit renamed so that the copies do not collide.
func bigConfig(tb testing.TB, size int) []byte {
	tb.Helper()
	var parts []Config
	for _, fx := range fixtures(tb) {
		if strings.HasPrefix(fx.name, "realdata/") && strings.Contains(filepath.Base(fx.name), "worker") {
			parts = append(parts, mustParse(tb, fx.name, fx.raw).Config)
		}
	}
	var big Config
	big.Ignition.Version = "3.5.0"
	for n := 0; ; n++ {
		for i, c := range parts {
			for _, f := range c.Storage.Files {
				f.Path = fmt.Sprintf("/opt/copy%d-%d%s", n, i, f.Path)
				big.Storage.Files = append(big.Storage.Files, f)
			}
			for _, u := range c.Systemd.Units {
				u.Name = fmt.Sprintf("copy%d-%d-%s", n, i, u.Name)
				big.Systemd.Units = append(big.Systemd.Units, u)
			}
		}
		// Spec 3.5, as the MCO writes it; users once, as keys cannot repeat.
		big.Passwd = parts[0].Passwd
		raw, err := Marshal(big, false)
		if err != nil {
			tb.Fatal(err)
		}
		if len(raw) >= size {
			return raw
		}
	}
}

// BenchmarkConvert is what the server does with a rendered config: parse it,
// find its lowest spec, and write it for a client (here spec 3.0, the
// longest chain of steps, and 2.2, the spec-2 path).
func BenchmarkConvert(b *testing.B) {
	raw := bigConfig(b, 1<<20)
	for _, target := range []Version{V3_0, V2_2, V3_6} {
		b.Run(fmt.Sprintf("%dKiB-to-%s", len(raw)>>10, target), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				p, err := Parse(raw)
				if err != nil {
					b.Fatal(err)
				}
				minVersion(&p.Config)
				if _, err := translateTo(&p.Config, target); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The parts on their own, to see where the time goes.
func BenchmarkParse(b *testing.B) {
	raw := bigConfig(b, 1<<20)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTranslate(b *testing.B) {
	p := mustParse(b, "big", bigConfig(b, 1<<20))
	for _, target := range []Version{V3_6, V3_5, V3_0, V2_2} {
		b.Run(target.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := translateTo(&p.Config, target); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkMinVersion(b *testing.B) {
	p := mustParse(b, "big", bigConfig(b, 1<<20))
	b.ReportAllocs()
	for b.Loop() {
		minVersion(&p.Config)
	}
}

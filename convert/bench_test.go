package convert

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	t30 "github.com/coreos/ignition/v2/config/v3_0/types"
	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/ignition/v2/config/validate"
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

// BenchmarkReaderFloor is what the readers' own code costs a review of a
// config new to the webhook however it is cached, for a config of one
// small file (the smallest new content: a generated MachineConfig's new
// file): Ignition's validation of that file at the spec written (3.5.0)
// and at the spec stored (3.0.0), each in a config of its own, and
// Ignition's five steps from 3.0.0 up to 3.5.0, which a reader of 3.5.0
// applies to the stored config (ParseCompatibleVersion). A review of new
// content cannot cost less than this; issue 46's budget for the small
// config's whole review is about 0.3 ms.
func BenchmarkReaderFloor(b *testing.B) {
	src := "data:,x"
	file := func(i int) t35.File {
		return t35.File{Node: t35.Node{Path: "/etc/bench/" + strconv.Itoa(i)}, FileEmbedded1: t35.FileEmbedded1{Contents: t35.Resource{Source: &src}}}
	}
	var at35 t35.Config
	at35.Ignition.Version = "3.5.0"
	at35.Storage.Files = []t35.File{file(0)}
	var at30 t30.Config
	at30.Ignition.Version = "3.0.0"
	at30.Storage.Files = []t30.File{{Node: t30.Node{Path: "/etc/bench/0"}, FileEmbedded1: t30.FileEmbedded1{Contents: t30.FileContents{Source: &src}}}}
	b.Run("validate-3.5", func(b *testing.B) {
		for range b.N {
			if validate.ValidateWithContext(at35, nil).IsFatal() {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("validate-3.0", func(b *testing.B) {
		for range b.N {
			if validate.ValidateWithContext(at30, nil).IsFatal() {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("steps-3.0-3.5", func(b *testing.B) {
		for range b.N {
			if up := stepUp(at30, V3_0, V3_5).(t35.Config); len(up.Storage.Files) != 1 {
				b.Fatal("lost the file")
			}
		}
	})
}

package render

import (
	"testing"

	"github.com/ignition-mcs/mcs/convert"
)

// BenchmarkRenderLargestPool renders the largest realdata pool (aws master,
// about 180 KB of Ignition) in full: merge, provenance, lowest-spec search,
// translation with its lossless proof, and the name.
func BenchmarkRenderLargestPool(b *testing.B) {
	s := loadRealdata(b, "aws")
	for _, tc := range []struct {
		name string
		opts Options
	}{{"lowest", Options{}}, {"spec3.5", Options{Spec: convert.V3_5}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.RenderPool("master", tc.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoadRealdata reads and parses a realdata tree.
func BenchmarkLoadRealdata(b *testing.B) {
	dir := realdataDir(b, "aws")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}

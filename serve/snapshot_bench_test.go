package serve

import (
	"testing"

	"github.com/ignition-mcs/mcs/render"
)

// BenchmarkBuildSnapshot measures a full re-render of the largest realdata
// set: load, render every pool, precompute every spec of every pool.
func BenchmarkBuildSnapshot(b *testing.B) {
	const dir = "../../shared/realdata/aws"
	b.Run("render", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			set, err := render.Load(dir)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := set.Render(render.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	set, err := render.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	results, rerr := set.Render(render.Options{})
	if rerr != nil {
		b.Fatal(rerr)
	}
	b.Run("precompute", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := BuildSnapshot(1, results, set.ControllerConfig(), NodeFiles{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

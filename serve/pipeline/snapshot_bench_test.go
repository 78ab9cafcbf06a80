package pipeline_test

import (
	"testing"

	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/internal/shareddata"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
)

// BenchmarkBuildSnapshot measures a full re-render of the largest realdata
// set: load, render every pool, precompute every spec of every pool.
func BenchmarkBuildSnapshot(b *testing.B) {
	dir := shareddata.Path(b, "realdata", "aws")
	b.Run("render", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			servetest.Render(b, dir, render.Options{})
		}
	})
	set, results := servetest.Render(b, dir, render.Options{})
	b.Run("precompute", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := pipeline.BuildSnapshot(1, results, set.ControllerConfig(), render.NodeFiles{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

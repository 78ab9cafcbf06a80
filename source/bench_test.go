package source_test

import (
	"context"
	"testing"

	"github.com/ignition-mcs/mcs/internal/shareddata"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/source"
)

// BenchmarkFullRerender is what one change to the directory costs: load the
// realdata/aws tree, render every pool, precompute every spec of every pool.
func BenchmarkFullRerender(b *testing.B) {
	d := &source.Dir{Path: shareddata.Path(b, "realdata", "aws")}
	b.ReportAllocs()
	for b.Loop() {
		in, err := d.Load(context.Background())
		if err != nil || len(in.Failed) > 0 {
			b.Fatal(err, in.Failed)
		}
		if _, err := serve.BuildSnapshot(1, in.Results, in.ControllerConfig, serve.NodeFiles{}); err != nil {
			b.Fatal(err)
		}
	}
}

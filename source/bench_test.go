package source_test

import (
	"context"
	"testing"

	"github.com/ignition-mcs/mcs/internal/shareddata"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/source"
)

// BenchmarkFullRerender is what a change to every pool costs: load the
// realdata/aws tree, render every pool, precompute every spec of every pool.
func BenchmarkFullRerender(b *testing.B) {
	d := &source.Dir{Path: shareddata.Path(b, "realdata", "aws")}
	b.ReportAllocs()
	for b.Loop() {
		source.ForgetRenders(d) // every pool changed
		in, err := d.Load(context.Background())
		if err != nil || len(in.Failed) > 0 {
			b.Fatal(err, in.Failed)
		}
		snap, err := pipeline.BuildSnapshot(1, in.Results, in.ControllerConfig, render.NodeFiles{})
		if err != nil {
			b.Fatal(err)
		}
		snap.Fill() // the specs a server encodes after the swap
	}
}

// BenchmarkUnchangedReload is what a reload that changes no pool costs (a
// change to a file no pool selects, or a touch): load, fingerprint, carry.
func BenchmarkUnchangedReload(b *testing.B) {
	d := &source.Dir{Path: shareddata.Path(b, "realdata", "aws")}
	in, err := d.Load(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	prev, err := pipeline.BuildSnapshot(1, in.Results, in.ControllerConfig, render.NodeFiles{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		in, err := d.Load(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		snap, err := pipeline.BuildSnapshotFrom(prev, 2, in.Results, in.ControllerConfig, render.NodeFiles{})
		if err != nil || snap.Rerendered != 0 {
			b.Fatal(err, snap.Rerendered)
		}
	}
}

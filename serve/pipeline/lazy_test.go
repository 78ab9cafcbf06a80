package pipeline

import (
	"bytes"
	"sync"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_6/types"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/rendertest"
	"github.com/ignition-mcs/mcs/render"
)

// responses encodes every spec of p and returns those it can be served at.
func responses(p *Pool) map[convert.Version]*Response {
	out := map[convert.Version]*Response{}
	for _, v := range convert.OutputVersions {
		if r := p.Response(v); r != nil {
			out[v] = r
		}
	}
	return out
}

func encoded(p *Pool) int {
	n := 0
	for i := range p.specs {
		if p.specs[i].resp != nil || p.specs[i].err != nil {
			n++
		}
	}
	return n
}

// A snapshot is served with each pool's rendered spec encoded; the others
// are encoded once, on first use, whoever asks at the same time, and the
// pool lets go of its encoder when all are.
func TestSpecsEncodedOnFirstUse(t *testing.T) {
	snap, err := BuildSnapshot(1, []*render.Result{rendertest.Result(t, "worker", rendertest.SharedIgn)}, nil, render.NodeFiles{})
	if err != nil {
		t.Fatal(err)
	}
	p := snap.pools["worker"]
	if n := encoded(p); n != 1 || p.specs[versionIndex(p.result.Spec)].resp == nil {
		t.Fatalf("%d specs encoded before serving, want the rendered spec alone", n)
	}
	got := make([]*Response, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = p.Response(convert.V3_4) })
	}
	wg.Wait()
	for _, r := range got {
		if r == nil || r != got[0] {
			t.Fatal("concurrent first requests got different responses")
		}
	}
	cfg := withNodeFiles(p.result.Config, mustNodeFiles(t, p.result))
	if err := servedConfig(&cfg, p.result, convert.V3_4); err != nil {
		t.Fatal(err)
	}
	want, err := convert.Encode(&cfg, convert.V3_4, false)
	if err != nil || !bytes.Equal(got[0].Body.Bytes(), want) {
		t.Fatalf("lazily encoded body differs from a direct encoding (%v)", err)
	}
	if p.build.Load() == nil {
		t.Fatal("encoder dropped before every spec was encoded")
	}
	snap.Fill()
	if n := encoded(p); n != len(convert.OutputVersions) || p.build.Load() != nil {
		t.Fatalf("after fill: %d specs encoded, encoder kept %v", n, p.build.Load() != nil)
	}
}

func mustNodeFiles(t *testing.T, res *render.Result) []types.File {
	t.Helper()
	files, err := render.NodeFiles{}.Files(res, nil)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A fill stops once its snapshot is no longer the one served: the bodies of
// a replaced snapshot are nobody's to encode.
func TestFillStopsWhenReplaced(t *testing.T) {
	results := []*render.Result{rendertest.Result(t, "master", rendertest.SharedIgn), rendertest.Result(t, "worker", rendertest.SharedIgn)}
	snap, err := BuildSnapshot(1, results, nil, render.NodeFiles{})
	if err != nil {
		t.Fatal(err)
	}
	served := true
	snap.fillWhile(func() bool { r := served; served = false; return r }) // replaced after the first pool
	if n := encoded(snap.pools["master"]); n != len(convert.OutputVersions) {
		t.Errorf("the pool filled while served: %d specs encoded", n)
	}
	if n := encoded(snap.pools["worker"]); n != 1 {
		t.Errorf("the fill went on after the snapshot was replaced: %d specs encoded, want the rendered one", n)
	}
}

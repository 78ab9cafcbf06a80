//go:build !race

package admit

import (
	"runtime"
	"sync"
	"testing"
)

// TestLowerCorpusReaders runs only without the race detector, which makes
// Ignition's reflection-heavy parsing and translation about five times
// slower (over 100 s of CPU for the corpus) and has nothing to find in it:
// its shards share nothing. `make test` runs it so, after `go test -race`.
// Without -race the 20,000 configs take about 25 s of CPU on the project's
// shared 2-core machine (`go test -c`, then the binary under /usr/bin/time,
// -test.run TestLowerCorpusReaders), half that in wall time on 2 idle CPUs.

// TestLowerCorpusReaders lowers corpusSize generated configs (seed
// corpusSeed), every spec from 3.0.0 to 3.6.0 with LUKS (Clevis Tang with
// advertisements, TPM2, custom pins, CEX), kernel arguments, links, appends
// and overwrite, users and groups, units with drop-ins, special mode bits,
// and nulls and empty lists where Ignition takes them, each under one of
// clusters: for every config lowered, Ignition's own parser at each
// reader's spec reads the stored bytes as it reads the bytes sent.
func TestLowerCorpusReaders(t *testing.T) {
	cases := corpus(corpusSize)
	// Shards on every CPU, each with its own tally, added up after.
	n := runtime.GOMAXPROCS(0)
	tallies := make([]*corpusTally, n)
	var wg sync.WaitGroup
	for w := range n {
		tallies[w] = newTally()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(cases) && !t.Failed(); i += n {
				checkReaders(t, cases[i], tallies[w])
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	tally := newTally()
	for _, x := range tallies {
		tally.add(x)
	}
	t.Logf("%d generated, %d parse as spec 3, %d lowered, %d kept as sent, %d above the ceiling (%d for a reader's loss); lowered %v; features lowered %v",
		tally.generated, tally.parsed, tally.lowered, tally.kept, tally.above, tally.lostAbove, tally.bySpec, tally.feature)
	// The corpus must keep exercising what it is for: a generator that
	// drifted into invalid configs would pass vacuously.
	if tally.lowered < corpusSize/10 {
		t.Errorf("only %d of %d configs lowered", tally.lowered, corpusSize)
	}
	for _, f := range corpusFeatures {
		if tally.feature[f] == 0 && f != "advertisement" && f != "cex" {
			t.Errorf("no lowered config uses %q", f)
		}
	}
	if tally.lostAbove == 0 {
		t.Error("no config was above the ceiling for a reader's loss (Tang advertisements should be)")
	}
}

package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/internal/shareddata"
)

// BenchmarkWatchPoll is what one of Dir.Watch's polls costs (a content key
// of the whole tree: a stat of every file, reading only those whose stat
// changed; see tree.Memo) on real trees and on 500 files: small
// MachineConfigs, and copies of a real cluster's (a few 160 KB base configs
// among 10 KB ones). At the default --poll of 1 s, ns/op ÷ 10⁹ is the share
// of a core that watching takes. Load is the same tree's load, for scale.
func BenchmarkWatchPoll(b *testing.B) {
	aws := shareddata.Path(b, "realdata", "aws")
	trees := []struct{ name, dir string }{
		{"realdata-aws", aws},
		{"fixtures", "../fixtures"},
		{"500-small", manyConfigs(b, 500, nil)},
		{"500-realdata", manyConfigs(b, 500, readAll(b, aws))},
	}
	for _, tr := range trees {
		d := &Dir{Path: tr.dir}
		// The trees were just written: on this clock their files are a
		// minute old, as in a tree that sits unchanged, so that their keys
		// are not racy (see tree.Memo) and are remembered.
		d.memo.Now = func() time.Time { return time.Now().Add(time.Minute) }
		b.Run(tr.name+"/poll", func(b *testing.B) {
			for b.Loop() {
				d.fingerprint()
			}
		})
		b.Run(tr.name+"/load", func(b *testing.B) {
			for b.Loop() {
				d.Load(context.Background()) // fixtures/ holds trees, not one: its error costs the same reads
			}
		})
	}
}

// manyConfigs is a tree of n MachineConfigs: the files of like in turn,
// each under its own name, or small ones of their own when like is nil.
func manyConfigs(b *testing.B, n int, like [][]byte) string {
	dir := b.TempDir()
	for i := range n {
		body := []byte(mctest.MachineConfig(fmt.Sprintf("%03d-worker", i), "worker", "x"))
		if like != nil {
			body = like[i%len(like)]
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d.yaml", i)), body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// readAll is the bytes of every file directly in dir.
func readAll(b *testing.B, dir string) [][]byte {
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var out [][]byte
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

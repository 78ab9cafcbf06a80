package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		live uint64
		want int
	}{
		{"nothing measured yet", 0, gcPercent},
		{"tiny heap: capped", 100 << 10, 1000},
		{"2 pools", 6 << 20, 133},
		{"at the crossover", 2 * gcHeadroom, gcPercent},
		{"102 pools", 80 << 20, gcPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := gcPercentFor(tc.live, gcPercent); got != tc.want {
				t.Errorf("gcPercentFor(%d) = %d, want %d", tc.live, got, tc.want)
			}
		})
	}
}

// After a collection the GC target is the one gcPercentFor gives for the
// heap it left live.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	stop := tuneGC(gcPercent)
	defer stop() // before the target is put back
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}}
	var want int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		runtime.GC()
		runtime.GC() // the first one's finalizer has run by the second's end or soon after
		time.Sleep(10 * time.Millisecond)
		metrics.Read(s)
		want = gcPercentFor(s[0].Value.Uint64(), gcPercent)
		if int(s[1].Value.Uint64()) == want {
			return
		}
	}
	t.Fatalf("GC target %d%%, want %d%% for %d bytes live", s[1].Value.Uint64(), want, s[0].Value.Uint64())
}

// mcs controller keeps a target of its own; every other command the
// server's.
func TestGCBaseFor(t *testing.T) {
	for args, want := range map[string]int{"controller --kubeconfig k": controllerGCPercent, "": gcPercent, "start --kubeconfig k": gcPercent, "--dir d": gcPercent} {
		if got := gcBaseFor(strings.Fields(args)); got != want {
			t.Errorf("gcBaseFor(%q) = %d, want %d", args, got, want)
		}
	}
}

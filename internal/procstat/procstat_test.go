package procstat

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// This process's CPU time grows with work; its peak resident set is at
// least its resident set and grows with a large allocation touched.
func TestSelf(t *testing.T) {
	pid := os.Getpid()
	c0, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); ; runtime.Gosched() { // busy up to 10 s, however loaded the machine
		c1, err := CPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		if c1 > c0 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("no CPU time counted in 10 s of work")
		}
	}
	rss0, peak0, err := Memory(pid)
	if err != nil || rss0 <= 0 || peak0 < rss0 {
		t.Fatalf("Memory: rss %d, peak %d, %v", rss0, peak0, err)
	}
	big := make([]byte, 256<<20)
	for i := 0; i < len(big); i += 4096 {
		big[i] = 1
	}
	_, peak1, err := Memory(pid)
	if err != nil || peak1 < peak0+200<<20 {
		t.Fatalf("peak %d after touching 256 MiB, was %d (%v)", peak1, peak0, err)
	}
	runtime.KeepAlive(big)
}

func TestMissing(t *testing.T) {
	if _, err := CPU(-1); err == nil {
		t.Error("CPU of no process: no error")
	}
	if _, _, err := Memory(-1); err == nil {
		t.Error("Memory of no process: no error")
	}
}

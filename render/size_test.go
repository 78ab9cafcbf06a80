package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// manyFiles is a MachineConfig for worker with n small files, as JSON or
// YAML: 100,000 make about 8 MB.
func manyFiles(n int, yaml bool) []byte {
	var b strings.Builder
	if yaml {
		b.WriteString("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 99-worker-many\n  labels:\n    machineconfiguration.openshift.io/role: worker\n" +
			"spec:\n  config:\n    ignition:\n      version: 3.2.0\n    storage:\n      files:\n")
		for i := range n {
			fmt.Fprintf(&b, "      - path: /etc/many/f%06d\n        mode: 420\n        contents:\n          source: data:,x%d\n", i, i)
		}
		return []byte(b.String())
	}
	b.WriteString(`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-worker-many","labels":{"machineconfiguration.openshift.io/role":"worker"}},` +
		`"spec":{"config":{"ignition":{"version":"3.2.0"},"storage":{"files":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"/etc/many/f%06d","mode":420,"contents":{"source":"data:,x%d"}}`, i, i)
	}
	b.WriteString(`]}}}}`)
	return []byte(b.String())
}

// A MachineConfig of 100,000 files, several MB, is refused as over the
// size limit before its config is parsed: the error names the file, the
// object and the path, and the refusal allocates about the input's size,
// not the hundreds of MB parsing and validating it took.
func TestLargeMachineConfigRefusedFirst(t *testing.T) {
	for _, yaml := range []bool{false, true} {
		name := map[bool]string{false: "in/99-worker-many.json", true: "in/99-worker-many.yaml"}[yaml]
		t.Run(name, func(t *testing.T) {
			data := manyFiles(100_000, yaml)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var l Loader
			l.Data(name, data)
			_, err := l.Set()
			runtime.ReadMemStats(&after)
			var es *Errors
			if !errors.As(err, &es) || len(es.List) != 1 {
				t.Fatalf("err %v", err)
			}
			x := es.List[0]
			if x.File != name || x.Object != "MachineConfig/99-worker-many" || x.Path.String() != "$.spec.config" || !errors.Is(x, ErrInvalid) ||
				!strings.Contains(x.Message, "above the limit of 1572864 (1.5 MiB") || !strings.Contains(x.Message, "not parsed") {
				t.Fatalf("error %v", x)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*uint64(len(data)) {
				t.Errorf("refusing %d bytes allocated %d: parsed before refusing?", len(data), alloc)
			}
			t.Logf("%d bytes refused: %s", len(data), x.Message[:60])
		})
	}
}

// A config is parsed, validated and rendered in time and memory linear in
// its entries: five times the files cost about five times as much, in
// allocations and in CPU time (a search per file from the start of the
// YAML the name is hashed over made it quadratic: minutes at 100,000).
// 2,000 and 10,000 files here (under -race too); BenchmarkManyFiles has
// 20,000 and 100,000.
func TestValidationLinear(t *testing.T) {
	a1, b1, c1 := manyFilesCost(t, 2_000)
	a5, b5, c5 := manyFilesCost(t, 10_000)
	ra, rb, rc := float64(a5)/float64(a1), float64(b5)/float64(b1), float64(c5)/float64(c1)
	t.Logf("2,000 files: %d allocations, %d MB, %v CPU; 10,000: %d, %d MB, %v; ratios %.2f, %.2f, %.2f", a1, b1>>20, c1, a5, b5>>20, c5, ra, rb, rc)
	if ra > 6 || rb > 6 {
		t.Errorf("allocations grow %.2f× (count) and %.2f× (bytes) for 5× the files: superlinear", ra, rb)
	}
	// Linear is 5; quadratic 25. CPU time, not wall time: a loaded
	// machine slows both runs, it does not make one do more work.
	if rc > 10 {
		t.Errorf("CPU time grows %.1f× for 5× the files: superlinear", rc)
	}
}

// BenchmarkManyFiles parses, validates and renders (to the size check's
// refusal) a config of 20,000 and of 100,000 files; ns/op and B/op grow
// five times, not twenty-five.
func BenchmarkManyFiles(b *testing.B) {
	for _, n := range []int{20_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				manyFilesCost(b, n)
			}
		})
	}
}

// BenchmarkRefuseLarge loads a MachineConfig of 100,000 files, as JSON and
// as YAML, to its refusal as over the size limit.
func BenchmarkRefuseLarge(b *testing.B) {
	for _, yaml := range []bool{false, true} {
		data := manyFiles(100_000, yaml)
		b.Run(map[bool]string{false: "json", true: "yaml"}[yaml], func(b *testing.B) {
			for range b.N {
				var l Loader
				l.Data(map[bool]string{false: "in/x.json", true: "in/x.yaml"}[yaml], data)
				if _, err := l.Set(); err == nil {
					b.Fatal("not refused")
				}
			}
		})
	}
}

// manyFilesCost parses and renders a config of n files, past the load's
// size check, to the render's refusal as over the size limit, and returns
// what that cost.
func manyFilesCost(t testing.TB, n int) (allocs, bytes uint64, cpu time.Duration) {
	mc := &MachineConfig{Source: "in/many.json"}
	if err := json.Unmarshal(manyFiles(n, false), mc); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c0 := cpuTime()
	var l Loader
	l.configs = append(l.configs, mc) // past the size check, to reach the parse
	s, err := l.Set()
	if err != nil {
		t.Fatal(err)
	}
	if _, errs := s.Render(Options{}); errs != nil && !strings.Contains(errs.Error(), "above the limit") {
		t.Fatalf("render: %v", errs)
	}
	cpu = cpuTime() - c0
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc, cpu
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Splicing items into the YAML a name is hashed over takes time linear in
// the items: a search per item from the start of the document made 100,000
// take minutes. Each splice is timed at its best of three, in CPU time.
func TestSpliceLinear(t *testing.T) {
	var c yamlItems
	splice := func(n int) time.Duration {
		var doc strings.Builder
		doc.WriteString("config:\n  storage:\n    files:\n")
		chunks := make([][]byte, n)
		for i := range n {
			doc.WriteString(itemIndent + c.markerOf(i) + "\n")
			chunks[i] = []byte(fmt.Sprintf("%s{path: /etc/f%d}\n", itemIndent, i))
		}
		best := time.Duration(1 << 62)
		for range 3 {
			c0 := cpuTime()
			out, ok := c.splice([]byte(doc.String()), chunks)
			best = min(best, cpuTime()-c0)
			if !ok || !strings.Contains(string(out), "{path: /etc/f"+fmt.Sprint(n-1)+"}\n") || strings.Contains(string(out), "mcsitem") {
				t.Fatalf("splice of %d: ok %v", n, ok)
			}
		}
		return best
	}
	small, large := splice(20_000), splice(100_000)
	if r := float64(large) / float64(max(small, time.Millisecond)); r > 12 {
		t.Errorf("splicing 100,000 items took %v, 20,000 %v: %.1f×, superlinear", large, small, r)
	}
}

package render

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ignition-mcs/mcs/internal/mctest"
)

// BenchmarkWorkerEdit renders what a worker MachineConfig edit renders in
// realdata/aws with custom pools beside it (each selecting the worker
// configs and one of its own): every pool but master, in a fresh set, as
// the controller does after the edit.
func BenchmarkWorkerEdit(b *testing.B) {
	for _, custom := range []int{18, 100} {
		b.Run(fmt.Sprintf("pools=%d", custom+2), func(b *testing.B) {
			dir := b.TempDir()
			if err := os.CopyFS(dir, os.DirFS(realdataDir(b, "aws"))); err != nil {
				b.Fatal(err)
			}
			var pools []string
			for i := range custom {
				name := fmt.Sprintf("custom-%03d", i)
				pools = append(pools, name)
				write(b, dir, name+".machineconfigpool.yaml", mctest.Pool(name))
				write(b, dir, "60-"+name+".yaml", mctest.MachineConfig("60-"+name, name, name))
			}
			pools = append(pools, "worker")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				write(b, dir, "99-worker-bench.yaml", mctest.MachineConfig("99-worker-bench", "worker", fmt.Sprint(i)))
				s, err := Load(dir)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for _, p := range pools {
					if _, err := s.RenderPool(p, Options{}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

func write(b testing.TB, dir, name, data string) {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
		b.Fatal(err)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ignition-mcs/mcs/internal/procstat"
)

var errGoalMissed = errors.New("a goal was missed")

// stormRun is one storm against one server.
type stormRun struct {
	target  *target
	round   int
	out     outcome
	cpu     time.Duration // the server's user+system time during it
	peakMiB float64       // the server's VmHWM after it: its peak since it started
	load    string        // load average at its start
}

// rounds runs the storm against each target in turn, --rounds times,
// alternating which goes first, and prints each as it ends.
func rounds(ctx context.Context, o options, f *fixture, targets []*target, stdout io.Writer) ([]stormRun, error) {
	storms := make([]*storm, len(targets))
	for i, t := range targets {
		s, err := newStorm(o, f, t)
		if err != nil {
			return nil, err
		}
		storms[i] = s
	}
	fmt.Fprintf(stdout, "%-5s %-5s %10s %9s %9s %9s %7s %8s %8s %9s  %s\n", "round", "server", "complete", "p50", "p99", "max", "failed", "retried", "CPU s", "peak MiB", "load")
	var runs []stormRun
	dropped := map[*target]bool{}
	for r := range o.rounds {
		for j := range targets {
			k := j
			if r%2 == 1 {
				k = len(targets) - 1 - j
			}
			if dropped[targets[k]] {
				continue
			}
			sr, err := one(ctx, storms[k], targets[k], r)
			if err != nil && targets[k].reportOnly && ctx.Err() == nil {
				fmt.Fprintf(stdout, "%s: dropped from the run: %v\n", targets[k].name, err)
				dropped[targets[k]] = true
				continue
			}
			if err != nil {
				return nil, err
			}
			runs = append(runs, sr)
			printRun(stdout, sr)
		}
	}
	return runs, nil
}

func one(ctx context.Context, s *storm, t *target, round int) (stormRun, error) {
	sr := stormRun{target: t, round: round, load: loadAverage()}
	cpu0, err := procstat.CPU(t.pid())
	if err != nil {
		return sr, fmt.Errorf("%s: %w", t.name, err)
	}
	sr.out = s.run(ctx)
	if ctx.Err() != nil {
		return sr, ctx.Err()
	}
	cpu1, err := procstat.CPU(t.pid())
	if err != nil {
		return sr, fmt.Errorf("%s (did it exit?): %w", t.name, err)
	}
	sr.cpu = cpu1 - cpu0
	_, peak, err := procstat.Memory(t.pid())
	if err != nil {
		return sr, err
	}
	sr.peakMiB = float64(peak) / (1 << 20)
	return sr, nil
}

func printRun(w io.Writer, r stormRun) {
	l := r.out.latency
	fmt.Fprintf(w, "%-5d %-6s %9.2fs %8.0fms %8.0fms %8.0fms %7d %8d %8.2f %9.0f  %s\n", r.round+1, r.target.name, r.out.took.Seconds(),
		ms(quantile(l, 0.5)), ms(quantile(l, 0.99)), ms(quantile(l, 1)), r.out.failures, r.out.retries, r.cpu.Seconds(), r.peakMiB, r.load)
	if r.out.firstErr != nil {
		fmt.Fprintf(w, "      first failure: %v\n", r.out.firstErr)
	}
	if r.out.firstRetry != nil {
		fmt.Fprintf(w, "      first retry: %v\n", r.out.firstRetry)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quantile is the q-quantile of sorted durations (0 when there are none).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// summary is one server's storms together.
type summary struct {
	took, p50, p99, max []float64 // per storm: seconds, then milliseconds
	failures, retries   int
	peakMiB             float64
	cpu                 []float64
}

func summarize(runs []stormRun, t *target) summary {
	var s summary
	for _, r := range runs {
		if r.target != t {
			continue
		}
		l := r.out.latency
		s.took = append(s.took, r.out.took.Seconds())
		s.p50, s.p99, s.max = append(s.p50, ms(quantile(l, 0.5))), append(s.p99, ms(quantile(l, 0.99))), append(s.max, ms(quantile(l, 1)))
		s.failures += r.out.failures
		s.retries += r.out.retries
		s.peakMiB = max(s.peakMiB, r.peakMiB)
		s.cpu = append(s.cpu, r.cpu.Seconds())
	}
	return s
}

// ratios are each round's mcs/bare completion time.
func ratios(runs []stormRun, a, b *target) []float64 {
	took := map[[2]any]float64{}
	for _, r := range runs {
		took[[2]any{r.target, r.round}] = r.out.took.Seconds()
	}
	var out []float64
	for r := 0; ; r++ {
		x, okA := took[[2]any{a, r}]
		y, okB := took[[2]any{b, r}]
		if !okA || !okB {
			return out
		}
		out = append(out, x/y)
	}
}

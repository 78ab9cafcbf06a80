package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// report prints each server's storms together, the paired ratios and the
// goals; errGoalMissed when a goal of a gated server is missed.
func report(w io.Writer, o options, targets []*target, runs []stormRun) error {
	fmt.Fprintf(w, "\n%-6s %-28s %-8s %-8s %-8s %-7s %-8s %-12s %s\n", "server", "complete s: median [range]", "p50 ms", "p99 ms", "max ms", "failed", "retried", "CPU s/storm", "peak RSS MiB")
	for _, t := range targets {
		s := summarize(runs, t)
		if len(s.took) == 0 {
			fmt.Fprintf(w, "%-6s no storm completed\n", t.name) // dropped (reportOnly) before its first
			continue
		}
		fmt.Fprintf(w, "%-6s %-28s %-8.0f %-8.0f %-8.0f %-7d %-8d %-12.2f %.0f\n", t.name, medianRange(s.took, "%.2f"),
			median(s.p50), median(s.p99), slices.Max(s.max), s.failures, s.retries, median(s.cpu), s.peakMiB)
	}
	var mcs, bare *target
	for _, t := range targets {
		switch t.name {
		case "mcs":
			mcs = t
		case "bare":
			bare = t
		}
	}
	rs := ratios(runs, mcs, bare)
	fmt.Fprintf(w, "mcs/bare completion, paired by round: %s\n", medianRange(rs, "%.3f"))
	for _, t := range targets {
		if t.reportOnly {
			fmt.Fprintf(w, "%s/bare completion, paired by round (reported, not gated): %s\n", t.name, medianRange(ratios(runs, t, bare), "%.3f"))
		}
	}
	missed := goals(o, summarize(runs, mcs), rs)
	for _, m := range missed {
		fmt.Fprintln(w, "GOAL MISSED:", m)
	}
	if len(missed) > 0 {
		return errGoalMissed
	}
	fmt.Fprintf(w, "goals met: every node served within %s, median ratio %.3f <= %.2f, peak RSS %.0f < %.0f MiB\n",
		o.goalTime, median(rs), o.goalRatio, summarize(runs, mcs).peakMiB, o.goalRSSMiB)
	return nil
}

// goals are the goals mcs's storms missed, in words.
func goals(o options, s summary, ratios []float64) []string {
	var out []string
	if s.failures > 0 {
		out = append(out, fmt.Sprintf("%d nodes were not served", s.failures))
	}
	for i, t := range s.took {
		if t > o.goalTime.Seconds() {
			out = append(out, fmt.Sprintf("storm %d took %.2f s, over %s", i+1, t, o.goalTime))
		}
	}
	if m := median(ratios); m > o.goalRatio {
		out = append(out, fmt.Sprintf("median completion %.3f× the bare server's, over %.2f×", m, o.goalRatio))
	}
	if s.peakMiB >= o.goalRSSMiB {
		out = append(out, fmt.Sprintf("peak RSS %.0f MiB, not under %.0f", s.peakMiB, o.goalRSSMiB))
	}
	return out
}

// medianRange is "median [min–max] (n)" of xs in format f.
func medianRange(xs []float64, f string) string {
	if len(xs) == 0 {
		return "-"
	}
	var b strings.Builder
	fmt.Fprintf(&b, f+" ["+f+"–"+f+"] (%d)", median(xs), slices.Min(xs), slices.Max(xs), len(xs))
	return b.String()
}

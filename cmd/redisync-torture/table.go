package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/redisync/redisync/internal/torture"
)

// printTable prints one row per report, then the outcome of each bad input
// (the bad-input scenario).
func printTable(w io.Writer, reports []*torture.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "primitive\tscenario\tgrants\tfaults\toverlaps (unexcused)\tfence: stale / conflicts\tlost: fenced / unfenced\tstale accepted\tother NEVER\tleaks\thangs\thand-off p50 / p99 ms\trecovery ms\tverdict")
	for _, r := range reports {
		verdict := "ok"
		if len(r.Violations()) > 0 {
			verdict = "NEVER violated"
		}
		other := r.PartialHolds + r.DoubleReleases + r.FIFOInversions
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d (%d)\t%d / %d\t%d / %d\t%d\t%d\t%d\t%d\t%.2f / %.2f\t%.0f\t%s\n",
			r.Primitive, r.Scenario, r.Grants, r.Faults, r.Overlaps, r.OverlapsUnexcused, r.FencedStale, r.FencedConflicts,
			r.FencedLost, r.PlainLost, r.StaleAccepted, other, len(r.Leaks), r.Hangs, r.HandoffP50, r.HandoffP99, r.RecoveryMax, verdict)
	}
	tw.Flush()
	for _, r := range reports {
		if len(r.Inputs) == 0 {
			continue
		}
		fmt.Fprintln(w, "\nbad inputs (S25):")
		for _, in := range r.Inputs {
			mark := "ok  "
			if !in.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(w, "  %s  %-30s  %s\n", mark, in.Input, in.Outcome)
		}
	}
}

// wrap breaks text into lines of at most width, at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(text) {
		if i > 0 && line+1+len(word) > width {
			b.WriteByte('\n')
			line = 0
		} else if i > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}

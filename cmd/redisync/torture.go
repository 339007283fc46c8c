package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redisync/redisync/internal/torture"
)

func tortureCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("torture", "torture [flags]", `
Runs workers that take rlocks on a few names and, inside each hold, update a
protected counter on a separate Redis — fenced (it accepts a write only with
the highest token so far and the version it read) and an unfenced twin —
while a seeded nemesis injects faults. Then it checks: no overlapping holds
unless a holder was paused past its lease or told it lost the lock (those
must be caught by the fence), no fenced update lost, no stale write accepted, nothing left in
Redis (keys, renewals, subscriptions), no call outliving its deadline; and
reports hand-off latency. It prints a table, optionally writes a JSON report
and a JSONL event log, and exits 1 if a NEVER result was violated.

Scenarios: `+strings.Join(torture.Scenarios, ", ")+`, or all (every one but
partition, which can crash the process: rueidis v1.0.79 panics on some
stalled-then-healed connections, an open finding).
Servers are started (redis-server must be on PATH) unless given; restart and
server-pause need the harness's own lock server.`, stdout, stderr)
	lockAddr := fs.String("lock-addr", "", "host:port of the Redis the locks live on (default: start one)")
	resAddr := fs.String("resource-addr", "", "host:port of the Redis holding the protected counters (default: start one)")
	scenario := fs.String("scenario", "all", "the fault to inject (see above)")
	workers := fs.Int("workers", 6, "concurrent workers, each with its own Client and connection")
	names := fs.Int("names", 2, "lock names the workers share")
	duration := fs.Duration("duration", 10*time.Second, "how long each scenario's workload runs")
	lease := fs.Duration("lease", time.Second, "the watchdog lease (holder-pause: the fixed lease the pause outlasts)")
	holdFor := fs.Duration("hold", 5*time.Millisecond, "longest critical section")
	seed := fs.Uint64("seed", 1, "seed of the workload and the fault schedule (same seed, same schedule)")
	jsonOut := fs.String("json", "", "write the reports as JSON to this file")
	eventsOut := fs.String("events", "", "write every hold and fault as JSONL to this file")
	if done, code := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return fail(stderr, "torture", exitUsage, "unexpected argument %q (see --help)", fs.Arg(0))
	}
	scenarios := []string{*scenario}
	if *scenario == "all" {
		scenarios = nil
		for _, sc := range torture.Scenarios {
			if sc != "partition" {
				scenarios = append(scenarios, sc)
			}
		}
	}
	var events io.Writer
	if *eventsOut != "" {
		f, err := os.Create(*eventsOut)
		if err != nil {
			return fail(stderr, "torture", exitError, "%v", err)
		}
		defer f.Close()
		events = f
	}
	var reports []*torture.Report
	violated := false
	for _, sc := range scenarios {
		fmt.Fprintf(stderr, "redisync torture: %s for %v...\n", sc, *duration)
		rep, err := torture.Run(context.Background(), torture.Config{
			LockAddr: *lockAddr, ResourceAddr: *resAddr, Scenario: sc,
			Workers: *workers, Names: *names, Duration: *duration,
			Lease: *lease, Hold: *holdFor, Seed: *seed, Events: events,
		})
		if err != nil {
			return fail(stderr, "torture", exitError, "%s: %v", sc, err)
		}
		reports = append(reports, rep)
		violated = violated || len(rep.Violations()) > 0
	}
	printTorture(stdout, reports)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(reports, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fail(stderr, "torture", exitError, "%v", err)
		}
	}
	if violated {
		for _, r := range reports {
			for _, v := range r.Violations() {
				fmt.Fprintf(stderr, "redisync torture: NEVER violated in %s: %s\n", r.Scenario, v)
			}
		}
		return exitError
	}
	return 0
}

func printTorture(w io.Writer, reports []*torture.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintln(tw, "scenario\tgrants\tfaults\toverlaps (unpaused)\tfence: stale / conflicts\tlost: fenced / unfenced\tstale accepted\tleaks\thangs\thand-off p50 / p99 ms\tverdict")
	for _, r := range reports {
		verdict := "ok"
		if len(r.Violations()) > 0 {
			verdict = "NEVER violated"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d (%d)\t%d / %d\t%d / %d\t%d\t%d\t%d\t%.2f / %.2f\t%s\n",
			r.Scenario, r.Grants, r.Faults, r.Overlaps, r.OverlapsUnpaused, r.FencedStale, r.FencedConflicts,
			r.FencedLost, r.PlainLost, r.StaleAccepted, len(r.Leaks), r.Hangs, r.HandoffP50, r.HandoffP99, verdict)
	}
}

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
Runs workers that take locks of one primitive on a few names and, inside each
hold, update a protected counter on a separate Redis — fenced (it accepts a
write only with the highest token so far and the version it read) and an
unfenced twin — while a seeded nemesis injects faults. Then it checks: no
overlapping holds beyond what the primitive allows (readers share; at most
--permits permit holds), unless a holder was paused past its lease, had the
lock taken away by the fault, or was told it lost the lock in time (those
must be caught by the fence); no fenced update lost; no stale write accepted;
no partial multilock; no double release accepted; FIFO grants (fairlock);
nothing left in Redis (keys, renewals, subscriptions); no call outliving its
deadline. It reports hand-off latency and the recovery time after a crash,
prints a table, optionally writes a JSON report and a JSONL event log, and
exits 1 if a NEVER result was violated.

Primitives: `+strings.Join(torture.Primitives, ", ")+`, or all.
Scenarios, or all (each that applies: minority-down and split-brain are
redlock's):
`+wrap(strings.Join(torture.Scenarios, ", "), 76)+`
Servers are started (redis-server must be on PATH) unless given; restart,
restart-delayed and server-pause need the harness's own lock servers.
split-brain shows two holders only with critical sections long enough for the
other half to get in (e.g. --hold 300ms). bad-input runs no workload: it
checks each bad input against every primitive (run it with rlock).
cancel-unlock, panic, shared-owner and shared-handle inject no server fault:
the fault is the caller (Unlock with a cancelled context, a panic inside
redisync.Do, two handles on one owner id, two goroutines sharing a handle);
a lock left held by nobody then counts as stuck, a NEVER result.
With --processes, workers are child processes of this binary: holder-pause
is then SIGSTOP of a process inside a hold, and crash SIGKILL.`, stdout, stderr)
	lockAddr := fs.String("lock-addr", "", "host:port of the Redis the locks live on; redlock: five, comma-separated (default: start them)")
	resAddr := fs.String("resource-addr", "", "host:port of the Redis holding the protected counters (default: start one)")
	primitive := fs.String("primitive", "rlock", "the lock to torture (see above)")
	scenario := fs.String("scenario", "all", "the fault to inject (see above)")
	workers := fs.Int("workers", 6, "concurrent workers, each with its own Clients and connections")
	names := fs.Int("names", 2, "lock names the workers share")
	permits := fs.Int("permits", 2, "semaphore: permits per name")
	duration := fs.Duration("duration", 10*time.Second, "how long each scenario's workload runs")
	lease := fs.Duration("lease", time.Second, "the watchdog lease (holder-pause: the fixed lease the pause outlasts)")
	holdFor := fs.Duration("hold", 5*time.Millisecond, "longest critical section")
	seed := fs.Uint64("seed", 1, "seed of the workload and the fault schedule (same seed, same schedule)")
	processes := fs.Bool("processes", false, "run each worker as a child process: holder-pause is then SIGSTOP and crash SIGKILL")
	jsonOut := fs.String("json", "", "write the reports as JSON to this file")
	eventsOut := fs.String("events", "", "write every hold and fault as JSONL to this file")
	if done, code := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return fail(stderr, "torture", exitUsage, "unexpected argument %q (see --help)", fs.Arg(0))
	}
	prims := []string{*primitive}
	if *primitive == "all" {
		prims = torture.Primitives
	}
	type job struct{ prim, sc string }
	var jobs []job
	for _, p := range prims {
		if *scenario != "all" {
			jobs = append(jobs, job{p, *scenario})
			continue
		}
		for _, sc := range torture.Scenarios {
			if torture.Applies(p, sc) {
				jobs = append(jobs, job{p, sc})
			}
		}
	}
	var child []string
	if *processes {
		exe, err := os.Executable()
		if err != nil {
			return fail(stderr, "torture", exitError, "%v", err)
		}
		child = []string{exe}
	}
	var lockAddrs []string
	if *lockAddr != "" {
		lockAddrs = strings.Split(*lockAddr, ",")
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
	for _, j := range jobs {
		fmt.Fprintf(stderr, "redisync torture: %s / %s for %v...\n", j.prim, j.sc, *duration)
		rep, err := torture.Run(context.Background(), torture.Config{
			Primitive: j.prim, LockAddrs: lockAddrs, ResourceAddr: *resAddr, Scenario: j.sc,
			Workers: *workers, Names: *names, Permits: *permits, Duration: *duration,
			Lease: *lease, Hold: *holdFor, Seed: *seed, Events: events, Child: child,
		})
		if err != nil {
			return fail(stderr, "torture", exitError, "%s / %s: %v", j.prim, j.sc, err)
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
				fmt.Fprintf(stderr, "redisync torture: NEVER violated in %s / %s: %s\n", r.Primitive, r.Scenario, v)
			}
		}
		return exitError
	}
	return 0
}

func printTorture(w io.Writer, reports []*torture.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
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

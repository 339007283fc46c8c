// Command redisync-torture is redisync's fault harness: workers take locks
// of one primitive while a seeded nemesis injects faults, and oracles check
// that no NEVER result was violated.
//
//	redisync-torture [--primitive P] [--scenario S] [--duration D] [--seed N] [--processes] [--json F] [--events F]
//
// It is a command of its own, not a subcommand of redisync, so that the
// redisync binary (the one installed for cron jobs and operators) does not
// link the harness, its proxies and its server management, and the demo
// compiles quickly on a cold cache. It needs redis-server on PATH unless
// --lock-addr and --resource-addr name the servers to use.
//
// Exit statuses: 0 every NEVER result held; 1 a NEVER result was violated,
// or the harness could not run; 2 bad flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redisync/redisync/internal/torture"
)

// Exit statuses.
const (
	exitFailed = 1 // a NEVER result was violated, or the harness could not run
	exitUsage  = 2 // bad flags or arguments
)

// about is the description --help prints above the flags.
var about = `Runs workers that take locks of one primitive on a few names and, inside each
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

Primitives: ` + strings.Join(torture.Primitives, ", ") + `, or all.
Scenarios, or all (each that applies: minority-down and split-brain are
redlock's):
` + wrap(strings.Join(torture.Scenarios, ", "), 76) + `
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
is then SIGSTOP of a process inside a hold, and crash SIGKILL.`

func main() {
	if torture.IsChild() { // a worker process of `redisync-torture --processes`
		os.Exit(torture.ChildMain(os.Stdout))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs one invocation and returns its exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("redisync-torture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // a bad flag is one line; --help is printed below
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
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(stdout, "usage: redisync-torture [flags]\n\n%s\n\nflags:\n", about)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	case err != nil:
		return exitUsage // the flag package printed the one-line error
	case fs.NArg() > 0:
		return fail(stderr, exitUsage, "unexpected argument %q (see --help)", fs.Arg(0))
	}

	type job struct{ prim, sc string }
	var jobs []job
	prims := []string{*primitive}
	if *primitive == "all" {
		prims = torture.Primitives
	}
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
			return fail(stderr, exitFailed, "%v", err)
		}
		child = []string{exe} // main runs torture.ChildMain in it
	}
	var lockAddrs []string
	if *lockAddr != "" {
		lockAddrs = strings.Split(*lockAddr, ",")
	}
	var events io.Writer
	if *eventsOut != "" {
		f, err := os.Create(*eventsOut)
		if err != nil {
			return fail(stderr, exitFailed, "%v", err)
		}
		defer f.Close()
		events = f
	}

	var reports []*torture.Report
	for _, j := range jobs {
		fmt.Fprintf(stderr, "redisync-torture: %s / %s for %v...\n", j.prim, j.sc, *duration)
		rep, err := torture.Run(context.Background(), torture.Config{
			Primitive: j.prim, LockAddrs: lockAddrs, ResourceAddr: *resAddr, Scenario: j.sc,
			Workers: *workers, Names: *names, Permits: *permits, Duration: *duration,
			Lease: *lease, Hold: *holdFor, Seed: *seed, Events: events, Child: child,
		})
		if err != nil {
			return fail(stderr, exitFailed, "%s / %s: %v", j.prim, j.sc, err)
		}
		reports = append(reports, rep)
	}
	printTable(stdout, reports)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(reports, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fail(stderr, exitFailed, "%v", err)
		}
	}
	violated := false
	for _, r := range reports {
		for _, v := range r.Violations() {
			violated = true
			fmt.Fprintf(stderr, "redisync-torture: NEVER violated in %s / %s: %s\n", r.Primitive, r.Scenario, v)
		}
	}
	if violated {
		return exitFailed
	}
	return 0
}

// fail prints one line, prefixed with the command's name, and returns code.
func fail(stderr io.Writer, code int, format string, args ...any) int {
	fmt.Fprintf(stderr, "redisync-torture: %s\n", fmt.Sprintf(format, args...))
	return code
}

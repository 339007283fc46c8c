package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// runCost is the cost scenario: it prints its markdown tables to stdout.
func runCost(only []string) error {
	if why := valgrindMissing(); why != "" {
		fmt.Fprintln(os.Stderr, "cost: skipped:", why)
		fmt.Println("cost: skipped:", why)
		return nil
	}
	started := time.Now()
	ctx := context.Background()
	// The idle rate and the renewal window need callgrind_control, which
	// reaches the server through vgdb (ptrace): without it the pairs are
	// measured without the idle correction and the renewal rows are left out.
	idle, err := idleRate()
	controlled := err == nil
	if controlled {
		fmt.Fprintf(os.Stderr, "== idle server: %s instructions a second\n", kilo(idle))
	} else {
		fmt.Fprintf(os.Stderr, "cost: %v: no idle correction, no renewal rows\n", err)
		idle = 0
	}
	var rows []costRow
	for _, c := range costCases() {
		if !costSelected(c.name, only) {
			continue
		}
		row, err := pairRow(ctx, c, idle)
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	var renewals []costRow
	if controlled {
		batch := 0
		for _, rc := range renewalCases() {
			if !costSelected(rc.name, only) {
				continue
			}
			row, mean, err := watchdogRow(ctx, rc, idle)
			if err != nil {
				return err
			}
			if batch == 0 { // rlock's
				batch = mean
			}
			renewals = append(renewals, row)
		}
		if batch == 0 { // rlock's was not counted
			batch = costHolds
		}
		for _, ref := range refRenewals {
			if !costSelected(ref.name, only) {
				continue
			}
			bare, err := bareRenewalRow(ctx, ref, batch)
			if err != nil {
				return err
			}
			renewals = append(renewals, bare)
		}
	}
	fmt.Print(costMarkdown(rows, renewals, idle, time.Since(started)))
	return nil
}

// pairRow counts c's pairs: the difference of two runs of costPairs'
// lengths, less the longer run's extra idle time at idle instructions a
// second, beside c's commandstats.
func pairRow(ctx context.Context, c costCase, idle float64) (costRow, error) {
	fmt.Fprintf(os.Stderr, "== %s\n", c.name)
	var ins [2]int64
	var took [2]time.Duration
	for i, n := range costPairs {
		var err error
		ins[i], err = callgrindRun(func(rc rueidis.Client, _ *callgrindServer) error {
			t := time.Now()
			defer func() { took[i] = time.Since(t) }()
			return c.pairs(ctx, rc, n)
		})
		if err != nil {
			return costRow{}, fmt.Errorf("%s: %w", c.name, err)
		}
	}
	// The longer run also idles longer between commands (the server's
	// timers): that share is taken off.
	ins[1] -= int64(idle * (took[1] - took[0]).Seconds())
	phases, err := c.commandstats(ctx, costPairs[0])
	if err != nil {
		return costRow{}, fmt.Errorf("%s: commandstats: %w", c.name, err)
	}
	row := costRow{name: c.name, perOp: costPairs[1] - costPairs[0], phases: phases,
		instructions: float64(ins[1]-ins[0]) / float64(costPairs[1]-costPairs[0])}
	fmt.Fprintf(os.Stderr, "   %.0f instructions per pair\n", row.instructions)
	return row, nil
}

// costSelected says whether -only selects the case: a reference row (its
// name starts with "(") always, but the read-write lock's (their names
// say "rwlock") only with rwlock; a primitive when its name starts with
// one of only's prefixes (every primitive when only is empty).
func costSelected(name string, only []string) bool {
	if strings.HasPrefix(name, "(") {
		return !strings.Contains(name, "rwlock") || costSelected("rwlock", only)
	}
	for _, p := range only {
		if p = strings.TrimSpace(p); p == "" && len(only) == 1 || p != "" && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// idleRate is what an idle server under callgrind executes a second (its
// timers, at hz 1), measured between a zero and a dump.
func idleRate() (float64, error) {
	const window = 5 * time.Second
	var n int64
	_, err := callgrindRun(func(_ rueidis.Client, s *callgrindServer) error {
		if err := s.zero(); err != nil {
			return err
		}
		t := time.Now()
		time.Sleep(window)
		var err error
		n, err = s.dump()
		if err == nil && time.Since(t) > 2*window {
			err = errors.New("the idle window took twice its length")
		}
		return err
	})
	return float64(n) / window.Seconds(), err
}

// watchdogRow measures the watchdog's renewals from inside one run: the
// counters are zeroed (callgrind_control) after its first batch and the
// holder records that batch writes (awaitRecords), and dumped as its
// costRounds-th batch after that is reported, less what the idle server executes
// in that time (idle a second); the holds renewed in the window are those
// its EventRenewed events count. It returns the row and the mean batch
// size.
func watchdogRow(ctx context.Context, rc renewalCase, idle float64) (costRow, int, error) {
	name := rc.name + " renewal (watchdog)"
	fmt.Fprintf(os.Stderr, "== %s\n", name)
	var window int64
	var marks [][2]int
	var opened time.Time
	var length time.Duration
	_, err := callgrindRun(func(r rueidis.Client, s *callgrindServer) error {
		_, _, err := rc.watchdogRenewals(ctx, r, costRounds, func(renewed, batches int) error {
			marks = append(marks, [2]int{renewed, batches})
			if len(marks) == 1 {
				opened = time.Now()
				return s.zero()
			}
			length = time.Since(opened)
			var err error
			window, err = s.dump()
			return err
		})
		return err
	})
	if err != nil {
		return costRow{}, 0, fmt.Errorf("%s: %w", name, err)
	}
	renewed, batches := marks[1][0]-marks[0][0], marks[1][1]-marks[0][1]
	if renewed <= 0 {
		return costRow{}, 0, fmt.Errorf("%s: no renewal in the window", name)
	}
	phase, err := renewalStats(ctx, rc.watchdogRenewals)
	if err != nil {
		return costRow{}, 0, fmt.Errorf("%s: commandstats: %w", name, err)
	}
	mean := int(math.Round(float64(renewed) / float64(max(batches, 1))))
	row := costRow{name: name, perOp: renewed, phases: []phaseUsage{phase},
		instructions: (float64(window) - idle*length.Seconds()) / float64(renewed),
		note:         fmt.Sprintf("%d holds renewed in %d batches in the window of %v", renewed, batches, length.Round(100*time.Millisecond))}
	fmt.Fprintf(os.Stderr, "   %.0f instructions per renewed hold (%s)\n", row.instructions, row.note)
	return row, mean, nil
}

// bareRenewalRow measures the bare renewal script as the difference of two
// runs of costRenewalRuns rounds over costHolds holds, in batches of batch.
func bareRenewalRow(ctx context.Context, ref refRenewal, batch int) (costRow, error) {
	name := ref.name
	fmt.Fprintf(os.Stderr, "== %s\n", name)
	run := bareRenewals(ref, batch)
	var ins [2]int64
	var renewed [2]int
	for i, rounds := range costRenewalRuns {
		var err error
		ins[i], err = callgrindRun(func(rc rueidis.Client, _ *callgrindServer) error {
			var err error
			renewed[i], _, err = run(ctx, rc, rounds, nil)
			return err
		})
		if err != nil {
			return costRow{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	phase, err := renewalStats(ctx, run)
	if err != nil {
		return costRow{}, fmt.Errorf("%s: commandstats: %w", name, err)
	}
	row := costRow{name: name, perOp: renewed[1] - renewed[0], phases: []phaseUsage{phase},
		instructions: float64(ins[1]-ins[0]) / float64(renewed[1]-renewed[0]),
		note:         fmt.Sprintf("batches of %d", batch)}
	fmt.Fprintf(os.Stderr, "   %.0f instructions per renewed hold (%s)\n", row.instructions, row.note)
	return row, nil
}

func costMarkdown(rows, renewals []costRow, idle float64, took time.Duration) string {
	var b strings.Builder
	version, _ := redisVersionOf()
	fmt.Fprintf(&b, "Measured %s, Redis %s under valgrind's callgrind (`make cost`, %v). "+
		"A pair's instructions are the difference of two runs on servers of their own (%d and %d pairs on distinct free names, one at a time), "+
		"so fixed costs cancel, less what the idle server executes in the longer run's extra time (%s a second: its timers, at hz 1).",
		time.Now().UTC().Format("2006-01-02"), version, took.Round(time.Second), costPairs[0], costPairs[1], kilo(idle))
	if len(renewals) > 0 {
		fmt.Fprintf(&b, " The watchdog's renewals are counted inside one run per primitive: %d holds with a %v lease, "+
			"the counters zeroed after the first renewal batch and its holder records and dumped once %d more batches are reported (rlock: %s), less the idle server's share; "+
			"the reference renewals ((d), and (g) with rwlock) renew as many bare holds, in %s (rlock's mean), as the difference of %d and %d rounds.",
			costHolds, costLease, costRounds, renewals[0].note, renewals[len(renewals)-1].note, costRenewalRuns[0], costRenewalRuns[1])
	} else {
		b.WriteString(" (No renewal rows: callgrind_control could not reach the server.)")
	}
	b.WriteString("\n\n")
	ref := map[string]float64{}
	for _, r := range append(rows, renewals...) {
		if len(r.name) > 3 && r.name[0] == '(' {
			ref[r.name[:3]] = r.instructions
		}
	}
	b.WriteString("| operation | redis-server instructions | ratio |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s, per pair | %s | %.2f× (a)%s |\n", r.name, kilo(r.instructions), r.instructions/ref["(a)"], against(r, ref))
	}
	for _, r := range renewals {
		fmt.Fprintf(&b, "| %s, per renewed hold | %s | %.2f× (d)%s |\n", r.name, kilo(r.instructions), r.instructions/ref["(d)"], against(r, ref))
	}
	b.WriteString("\nPer script, from INFO commandstats on a server of its own (server µs are times: noise on a loaded machine; a renewal's script call is a batch):\n\n")
	b.WriteString("| operation | script | script calls per op | Redis calls per op | server µs per script call | server µs per op |\n|---|---|---|---|---|---|\n")
	for _, r := range append(rows, renewals...) {
		for _, p := range r.phases {
			ops := float64(max(p.ops, 1))
			calls := p.u.scripts
			if calls == 0 { // native commands: per command
				calls = p.u.calls
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f | %.1f |\n", r.name, p.name,
				trim(float64(p.u.scripts)/ops), trim(float64(p.u.calls)/ops), p.u.scriptUs/float64(max(calls, 1)), p.u.scriptUs/ops)
		}
	}
	return b.String()
}

// against is the read-write lock's rows' second ratio, to Redisson's own
// read-write lock scripts: (e) and (f) its pairs, (g) its read renewal
// ((d), its RLock renewal, is also its write lock's). "" for other rows,
// or when the reference was not counted.
func against(r costRow, ref map[string]float64) string {
	for _, v := range [][2]string{{"rwlock read renewal", "(g)"}, {"rwlock read", "(e)"}, {"rwlock write renewal", ""}, {"rwlock write", "(f)"}} {
		if !strings.HasPrefix(r.name, v[0]) {
			continue
		}
		if n := ref[v[1]]; n > 0 {
			return fmt.Sprintf(", %.2f× %s", r.instructions/n, v[1])
		}
		return ""
	}
	return ""
}

func kilo(v float64) string { return fmt.Sprintf("%.1fk", v/1000) }

func trim(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	if v < 0.1 {
		return fmt.Sprintf("%.4f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// redisVersionOf is redis-server's version, from its --version line.
func redisVersionOf() (string, error) {
	out, err := execOutput("redis-server", "--version")
	if err != nil {
		return "unknown", err
	}
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v, nil
		}
	}
	return "unknown", nil
}

package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

// lockStats is what the demo learns about one lock, guarded by the demo's mu
// (so an overlap of two holders is observed, not a data race).
type lockStats struct {
	name         string
	acquisitions int
	handoffs     int // acquisitions by a different worker than the previous one
	lastWorker   int
	lastToken    uint64
	tokenErrors  int // tokens that did not rise
	overlaps     int // a holder found another holder inside
	inside       bool
	waits        []time.Duration
}

func demo(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo", "demo [flags]", `
Workers contend for a few locks; prints acquisitions, hand-offs, wait
percentiles, and checks that holders never overlapped and every fencing token
rose (exit 1 if not). The server: --redis, else $REDIS_URL, else
`+embeddedDefault+`.`, stdout, stderr)
	conn := addConnFlags(fs.FlagSet, true)
	workers := fs.Int("workers", 8, "contending workers")
	locks := fs.Int("locks", 3, "locks they contend for")
	duration := fs.Duration("duration", 3*time.Second, "how long to run")
	if done, code := parseFlags(fs, args); done {
		return code
	}
	if *workers < 1 || *locks < 1 || *duration <= 0 {
		return fail(stderr, "demo", exitUsage, "--workers and --locks must be at least 1 and --duration positive")
	}
	rc, where, closeRC, err := conn.connect(true)
	if err != nil {
		return fail(stderr, "demo", exitError, "%v", err)
	}
	defer closeRC()
	c := redisync.New(rc, redisync.WithWatchdogTimeout(3*time.Second))
	defer c.Close()

	fmt.Fprintf(stdout, "redisync demo: %d workers, %d locks, %v, on %s\n\n", *workers, *locks, *duration, where)
	stats := make([]*lockStats, *locks)
	for i := range stats {
		stats[i] = &lockStats{name: fmt.Sprintf("redisync:demo:%d", i), lastWorker: -1}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := work(ctx, c, w, stats, &mu); err != nil {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return report(stdout, stderr, stats, failures)
}

// work makes worker w take random locks until ctx ends.
func work(ctx context.Context, c *redisync.Client, w int, stats []*lockStats, mu *sync.Mutex) error {
	handles := make([]*rlock.Mutex, len(stats))
	for i, s := range stats {
		handles[i] = rlock.New(c, s.name)
	}
	for ctx.Err() == nil {
		i := rand.IntN(len(stats))
		m, s := handles[i], stats[i]
		start := time.Now()
		if err := m.Lock(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("worker %d: lock %s: %w", w, s.name, err)
		}
		waited := time.Since(start)
		mu.Lock()
		if s.inside {
			s.overlaps++
		}
		s.inside = true
		s.acquisitions++
		if s.lastWorker >= 0 && s.lastWorker != w {
			s.handoffs++
		}
		s.lastWorker = w
		if tok := m.Token(); tok <= s.lastToken {
			s.tokenErrors++
		} else {
			s.lastToken = tok
		}
		s.waits = append(s.waits, waited)
		mu.Unlock()

		time.Sleep(time.Duration(200+rand.IntN(800)) * time.Microsecond) // the critical section

		mu.Lock()
		s.inside = false
		mu.Unlock()
		if err := m.Unlock(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("worker %d: unlock %s: %w", w, s.name, err)
		}
	}
	return nil
}

func report(stdout, stderr io.Writer, stats []*lockStats, failures []error) int {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "lock\tacquisitions\thand-offs\twait p50\twait p99\ttokens rose\toverlaps\t")
	ok := len(failures) == 0
	total := 0
	for _, s := range stats {
		slices.Sort(s.waits)
		rose := "yes"
		if s.tokenErrors > 0 {
			rose = fmt.Sprintf("NO (%d)", s.tokenErrors)
			ok = false
		}
		if s.overlaps > 0 {
			ok = false
		}
		total += s.acquisitions
		fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%v\t%s\t%d\t\n", s.name, s.acquisitions, s.handoffs,
			percentile(s.waits, 0.50), percentile(s.waits, 0.99), rose, s.overlaps)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\n%d acquisitions in all.\n", total)
	for _, err := range failures {
		fmt.Fprintln(stderr, "redisync demo:", err)
	}
	if !ok {
		fmt.Fprintln(stdout, "FAILED: a fencing token did not rise, holders overlapped, or a worker failed.")
		return 1
	}
	fmt.Fprintln(stdout, "OK: no overlapping holders, and every fencing token was higher than the one before it.")
	return 0
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1))].Round(time.Microsecond)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/redlock"
)

type runner struct {
	quick  bool
	addr   string   // the main server
	nodes  []string // five Redlock nodes
	log    io.Writer
	rtt    latencies
	bare   latencies       // the bare Redisson script pair, one goroutine
	limit  map[int]float64 // bare script pairs per second, by goroutines
	single latencies       // redisync rlock, one goroutine (Redlock's reference)
	report Report
}

func (r *runner) dur() time.Duration {
	if r.quick {
		return time.Second
	}
	return 3 * time.Second
}

func (r *runner) iterations() int {
	if r.quick {
		return 500
	}
	return 3000
}

func (r *runner) sizes() []int {
	if r.quick {
		return []int{64, 1024}
	}
	return []int{64, 256, 1024}
}

func (r *runner) add(res Result) {
	r.report.Results = append(r.report.Results, res)
	fmt.Fprintf(r.log, "   %-28s %-30s %s\n", res.Scenario, res.Contender, res.short())
}

func (r *runner) client() (rueidis.Client, error) {
	return rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{r.addr}, DisableCache: true})
}

func redisVersion(addr string) (string, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		return "", err
	}
	defer rc.Close()
	info, err := rc.Do(context.Background(), rc.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return "", err
	}
	for _, line := range splitLines(info) {
		if v, ok := cut(line, "redis_version:"); ok {
			return v, nil
		}
	}
	return "", errors.New("no redis_version")
}

// references measures the round trip (PING) and the limit: Redisson's
// bare RLock script pair (bare.go) called through one auto-pipelining
// rueidis client, with no library logic — what a reentrant hash lock costs
// with no guarantee beyond its own. The native SET NX PX + DEL pair is the
// second reference row: the cheapest lock there is.
func (r *runner) references() error {
	rc, err := r.client()
	if err != nil {
		return err
	}
	defer rc.Close()
	ctx := context.Background()
	d, _, err := sequential(r.iterations(), func() error { return rc.Do(ctx, rc.B().Ping().Build()).Error() })
	if err != nil {
		return err
	}
	r.rtt = summarize(d)
	r.add(Result{Scenario: "reference", Contender: "rtt (PING)", Value: us(r.rtt.Mean), Unit: "µs", P50: us(r.rtt.P50), P99: us(r.rtt.P99)})
	r.limit = map[int]float64{}
	for _, ref := range []struct {
		name, key string
		pair      pair
	}{{"limit: bare Redisson scripts", "bench:bare", barePair}, {"native SET NX PX + DEL", "bench:native", nativePair}} {
		k := bareKeys(ref.key)
		d, allocs, err := sequential(r.iterations(), func() error { return ref.pair(ctx, rc, k, "owner:bare") })
		if err != nil {
			return err
		}
		l := summarize(d)
		res := Result{Scenario: "reference", Contender: ref.name + ", 1 goroutine", Value: us(l.Mean), Unit: "µs",
			Ratio: float64(l.Mean) / float64(2*r.rtt.Mean), RatioTo: "2×rtt", P50: us(l.P50), P99: us(l.P99), Allocs: allocs}
		if r.bare.N == 0 {
			r.bare = l
		} else {
			res.VsLimit = float64(l.Mean) / float64(r.bare.Mean)
		}
		r.add(res)
		for _, g := range r.sizes() {
			ops, err := parallel(g, r.dur(), func(i int) func(context.Context) error {
				k := bareKeys(fmt.Sprintf("%s:%d:%d", ref.key, g, i)) // a pair cut by the deadline leaves its key
				owner := fmt.Sprintf("owner:%d", i)
				return func(ctx context.Context) error { return ref.pair(ctx, rc, k, owner) }
			})
			if err != nil {
				return err
			}
			res := Result{Scenario: "reference", Contender: fmt.Sprintf("%s, %d goroutines", ref.name, g), Value: ops, Unit: "pairs/s"}
			if _, ok := r.limit[g]; ok {
				res.Ratio, res.RatioTo = ops/r.limit[g], "limit"
			} else {
				r.limit[g] = ops
			}
			r.add(res)
		}
	}
	return nil
}

// withContender opens c on the main server, emptied first (contenders
// leave different things behind: a semaphore keeps its capacity), for the
// length of f.
func (r *runner) withContender(c contender, f func(newLocker func(string) locker) error) error {
	if err := r.flush(); err != nil {
		return err
	}
	return r.opened(c, f)
}

// opened opens c on the main server as it is, for the length of f.
func (r *runner) opened(c contender, f func(newLocker func(string) locker) error) error {
	newLocker, cleanup, err := c.open(r.addr)
	if err != nil {
		return err
	}
	defer cleanup()
	return f(newLocker)
}

func (r *runner) flush() error {
	rc, err := r.client()
	if err != nil {
		return err
	}
	defer rc.Close()
	return rc.Do(context.Background(), rc.B().Flushall().Build()).Error()
}

func pairOf(l locker) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if err := l.Lock(ctx); err != nil {
			return err
		}
		return l.Unlock(context.Background())
	}
}

// 1. Uncontended acquire+release, one goroutine: ratio to 2×rtt (a pair is
// two round trips at best) and to the bare script pair.
func (r *runner) uncontended() error {
	for _, c := range contenders() {
		err := r.withContender(c, func(newLocker func(string) locker) error {
			pair := pairOf(newLocker("bench:seq"))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			d, allocs, err := sequential(r.iterations(), func() error { return pair(ctx) })
			if err != nil {
				return err
			}
			l := summarize(d)
			if c.Name == "redisync rlock" {
				r.single = l
			}
			r.add(Result{Scenario: "1 uncontended", Contender: c.Name, Value: us(l.Mean), Unit: "µs",
				Ratio: float64(l.Mean) / float64(2*r.rtt.Mean), RatioTo: "2×rtt",
				VsLimit: float64(l.Mean) / float64(r.bare.Mean), P50: us(l.P50), P99: us(l.P99), Allocs: allocs})
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	return nil
}

// 2. Throughput on distinct keys: ratio to the limit at the same number of
// goroutines.
func (r *runner) throughput() error {
	for _, g := range r.sizes() {
		for _, c := range contenders() {
			err := r.withContender(c, func(newLocker func(string) locker) error {
				ops, err := parallel(g, r.dur(), func(i int) func(context.Context) error {
					return pairOf(newLocker(fmt.Sprintf("bench:tp:%d", i)))
				})
				if err != nil {
					return err
				}
				r.add(Result{Scenario: fmt.Sprintf("2 distinct keys, %d goroutines", g), Contender: c.Name,
					Value: ops, Unit: "pairs/s", Ratio: ops / r.limit[g], RatioTo: "limit"})
				return nil
			})
			if err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
		}
	}
	return nil
}

// 3. One hot key, 64 goroutines: grants per second, as a ratio to the
// limit at 64 goroutines on distinct keys.
func (r *runner) hotKey() error {
	for _, c := range contenders() {
		err := r.withContender(c, func(newLocker func(string) locker) error {
			ops, err := parallel(64, r.dur(), func(int) func(context.Context) error { return pairOf(newLocker("bench:hot")) })
			if err != nil {
				return err
			}
			r.add(Result{Scenario: "3 one hot key, 64 goroutines", Contender: c.Name, Value: ops, Unit: "grants/s", Ratio: ops / r.limit[64], RatioTo: "limit@64"})
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	return nil
}

// event is one acquisition or release in a hand-off run.
type event struct {
	Proc    int   `json:"proc"`    // process
	Worker  int   `json:"worker"`  // goroutine
	Called  int64 `json:"called"`  // acquire: when Lock was called (unix ns)
	At      int64 `json:"at"`      // when it happened (unix ns)
	Release bool  `json:"release"` // false: acquisition
}

// turns lets a worker that released wait until someone else has taken the
// lock, so that every grant measured is a hand-off to a waiter (with a
// lock that wakes nobody, the releaser would otherwise win again and again
// and only lucky polls would be measured). Grants by another process arrive
// through remote.
type turns struct {
	mu     sync.Mutex
	cond   *sync.Cond
	n      uint64 // grants so far, anywhere
	notify func() // tells the other process about a grant here (nil: none)
}

func newTurns() *turns {
	t := &turns{}
	t.cond = sync.NewCond(&t.mu)
	return t
}

func (t *turns) granted() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
	t.cond.Broadcast()
	if t.notify != nil {
		t.notify()
	}
}

func (t *turns) remote() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
	t.cond.Broadcast()
}

func (t *turns) count() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// waitPast blocks until a grant after the n-th, or until ctx ends.
func (t *turns) waitPast(ctx context.Context, n uint64) {
	stop := context.AfterFunc(ctx, t.cond.Broadcast)
	defer stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.n == n && ctx.Err() == nil {
		t.cond.Wait()
	}
}

// handoffLoop runs workers goroutines on one key for d, recording events.
// Each holds the lock for hold; with turns set, after releasing it waits
// until someone else has taken the lock before asking again.
func handoffLoop(proc, workers int, d, hold time.Duration, tr *turns, newLocker func(string) locker) ([]event, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var events []event
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		l := newLocker("bench:handoff")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				called := time.Now().UnixNano()
				if err := l.Lock(ctx); err != nil {
					if ctx.Err() == nil {
						errs[w] = err
					}
					return
				}
				got := time.Now().UnixNano()
				var seen uint64
				if tr != nil {
					tr.granted()
					seen = tr.count()
				}
				if hold > 0 {
					time.Sleep(hold)
				}
				released := time.Now().UnixNano()
				mu.Lock()
				events = append(events, event{Proc: proc, Worker: w, Called: called, At: got}, event{Proc: proc, Worker: w, At: released, Release: true})
				mu.Unlock()
				if err := l.Unlock(context.Background()); err != nil {
					errs[w] = err
					return
				}
				if tr != nil {
					tr.waitPast(ctx, seen)
				}
			}
		}()
	}
	wg.Wait()
	return events, errors.Join(errs...)
}

// handoffs measures, for every acquisition by a caller that was already
// waiting when the previous holder released, the time from that release to
// the grant; crossOnly keeps only hand-offs between processes.
func handoffs(events []event, crossOnly bool) []time.Duration {
	slices.SortFunc(events, func(a, b event) int { return int(a.At - b.At) })
	var out []time.Duration
	var last *event
	for i := range events {
		e := &events[i]
		if e.Release {
			last = e
			continue
		}
		if last == nil || e.Called >= last.At || (last.Proc == e.Proc && last.Worker == e.Worker) || (crossOnly && last.Proc == e.Proc) {
			continue
		}
		out = append(out, time.Duration(e.At-last.At))
	}
	return out
}

// handoffHold is how long a holder keeps the lock in the hand-off runs: long
// enough that the others are already waiting when it releases.
const handoffHold = 100 * time.Microsecond

// 4. Hand-off latency with 1, 10 and 100 waiters in-process, and between
// two processes: ratio of the p50 to the rtt.
func (r *runner) handoff() error {
	waiters := []int{1, 10, 100}
	if r.quick {
		waiters = []int{1, 10}
	}
	for _, c := range contenders() {
		for _, w := range waiters {
			err := r.withContender(c, func(newLocker func(string) locker) error {
				events, err := handoffLoop(0, w+1, r.dur(), handoffHold, newTurns(), newLocker)
				if err != nil {
					return err
				}
				r.addHandoff(fmt.Sprintf("4 hand-off, %d waiters", w), c.Name, handoffs(events, false))
				return nil
			})
			if err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
		}
		if err := r.crossProcess(c); err != nil {
			return fmt.Errorf("%s across processes: %w", c.Name, err)
		}
	}
	return nil
}

func (r *runner) addHandoff(scenario, name string, d []time.Duration) {
	l := summarize(d)
	res := Result{Scenario: scenario, Contender: name, Value: us(l.P50), Unit: "µs p50", P50: us(l.P50), P99: us(l.P99), Count: l.N}
	if l.N > 0 {
		res.Ratio, res.RatioTo = float64(l.P50)/float64(r.rtt.P50), "rtt"
	}
	r.add(res)
}

func commandCalls(ctx context.Context, rc rueidis.Client, cmd string) int64 {
	info, err := rc.Do(ctx, rc.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return 0
	}
	for _, line := range splitLines(info) {
		if rest, ok := cut(line, "cmdstat_"+cmd+":calls="); ok {
			var n int64
			fmt.Sscanf(rest, "%d", &n)
			return n
		}
	}
	return 0
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// 6. Redlock on 3 and 5 nodes against redsync on the same nodes, as ratios
// to redisync rlock on one node.
func (r *runner) redlock() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, n := range []int{3, 5} {
		var clients []*redisync.Client
		for _, addr := range r.nodes[:n] {
			rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
			if err != nil {
				return err
			}
			defer rc.Close()
			c := redisync.New(rc)
			defer c.Close()
			clients = append(clients, c)
		}
		m := redlock.New(clients, "bench:redlock")
		d, allocs, err := sequential(r.iterations(), func() error { return pairOf(m)(ctx) })
		if err != nil {
			return err
		}
		l := summarize(d)
		r.add(Result{Scenario: fmt.Sprintf("6 Redlock, %d nodes", n), Contender: "redisync redlock", Value: us(l.Mean), Unit: "µs",
			Ratio: float64(l.Mean) / float64(r.single.Mean), RatioTo: "rlock, 1 node", P50: us(l.P50), P99: us(l.P99), Allocs: allocs})
		rs, closeRS := redsyncOn(r.nodes[:n])
		d, allocs, err = sequential(r.iterations(), func() error { return pairOf(redsyncLocker{rs.NewMutex("bench:redsync", redsyncOptions...)})(ctx) })
		closeRS()
		if err != nil {
			return err
		}
		l = summarize(d)
		r.add(Result{Scenario: fmt.Sprintf("6 Redlock, %d nodes", n), Contender: "redsync v4", Value: us(l.Mean), Unit: "µs",
			Ratio: float64(l.Mean) / float64(r.single.Mean), RatioTo: "rlock, 1 node", P50: us(l.P50), P99: us(l.P99), Allocs: allocs})
	}
	return nil
}

// 7. Fairness: 16 goroutines on one key, each holding 200 µs; how many
// earlier arrivals, still waiting, each grant overtook.
func (r *runner) fairness() error {
	for _, c := range contenders() {
		err := r.withContender(c, func(newLocker func(string) locker) error {
			events, err := handoffLoop(0, 16, r.dur(), 200*time.Microsecond, nil, newLocker)
			if err != nil {
				return err
			}
			var grants []event
			for _, e := range events {
				if !e.Release {
					grants = append(grants, e)
				}
			}
			overtakes := 0
			for _, g := range grants {
				for _, o := range grants {
					if o.Called < g.Called && o.At > g.At {
						overtakes++
					}
				}
			}
			r.add(Result{Scenario: "7 fairness, 16 goroutines", Contender: c.Name,
				Value: float64(overtakes) / float64(max(1, len(grants))), Unit: "overtakes/grant", Count: len(grants)})
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	return nil
}

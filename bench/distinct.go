package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/redistest"
)

// runDistinct is scenario 2 alone, for iterating on the client side
// (-distinct): the redisync primitives on distinct keys at 64 and 1,024
// goroutines, each run between two runs of the limit (the bare Redisson
// pair, as references measures it) and divided by their mean, so that a
// load that drifts during the run moves both sides of a ratio alike. Beside
// each ratio it prints the client's CPU per pair (this process: the
// library, rueidis and the loop) and the server's (INFO cpu), in µs: on a
// machine whose cores the client shares with redis-server, every µs the
// client spends is one the server does not get.
func runDistinct(rounds int, dur time.Duration, only []string, profile string) error {
	s, err := redistest.StartMain()
	if err != nil {
		return err
	}
	defer s.Kill()
	r := &runner{addr: s.Addr(), log: os.Stderr}
	var cs []contender
	for _, c := range contenders() {
		if strings.HasPrefix(c.Name, "redisync ") && matches(only, strings.TrimPrefix(c.Name, "redisync ")) {
			cs = append(cs, c)
		}
	}
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	bare := contender{Name: "limit: bare Redisson scripts", open: func(addr string) (func(string) locker, func(), error) {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			return nil, nil, err
		}
		n := 0
		return func(key string) locker {
			n++
			return &bareLocker{rc: rc, k: bareKeys(key), owner: "owner:" + strconv.Itoa(n)}
		}, rc.Close, nil
	}}
	fmt.Printf("| round | goroutines | contender | pairs/s | ratio to limit | by CPU | client µs/pair | server µs/pair | client writes/pair |\n|---|---|---|---|---|---|---|---|---|\n")
	for round := 1; round <= rounds; round++ {
		if err := r.sequentialCPU(append([]contender{bare}, cs...)); err != nil {
			return err
		}
		for _, g := range []int{64, 1024} {
			before, err := r.distinctRun(bare, g, dur)
			if err != nil {
				return err
			}
			fmt.Printf("| %d | %d | %s | %.0f | | | %.1f | %.1f | %.2f |\n", round, g, bare.Name, before.ops, before.client, before.server, before.writes)
			for _, c := range cs {
				m, err := r.distinctRun(c, g, dur)
				if err != nil {
					return fmt.Errorf("%s: %w", c.Name, err)
				}
				after, err := r.distinctRun(bare, g, dur)
				if err != nil {
					return err
				}
				limit := (before.ops + after.ops) / 2
				limitCPU := (before.client + before.server + after.client + after.server) / 2
				fmt.Printf("| %d | %d | %s | %.0f | %.2f | %.2f | %.1f | %.1f | %.2f |\n", round, g, c.Name, m.ops, m.ops/limit,
					limitCPU/(m.client+m.server), m.client, m.server, m.writes)
				fmt.Printf("| %d | %d | %s | %.0f | | | %.1f | %.1f | %.2f |\n", round, g, bare.Name, after.ops, after.client, after.server, after.writes)
				before = after
			}
		}
	}
	return nil
}

func matches(only []string, name string) bool {
	if len(only) == 0 || (len(only) == 1 && only[0] == "") {
		return true
	}
	for _, o := range only {
		if o != "" && strings.HasPrefix(name, o) {
			return true
		}
	}
	return false
}

// distinctMeasure is one run of scenario 2: pairs per second, and CPU µs per
// pair on each side.
type distinctMeasure struct{ ops, client, server, writes float64 }

// distinctRun is scenario 2's measurement (throughput) for one contender
// at g goroutines, on an emptied server, with the CPU both sides spent.
func (r *runner) distinctRun(c contender, g int, dur time.Duration) (distinctMeasure, error) {
	var m distinctMeasure
	var err error
	// The label follows the goroutines the contender's client starts (its
	// writers and readers): -tagfocus picks one contender's profile.
	pprof.Do(context.Background(), pprof.Labels("contender", c.Name, "goroutines", strconv.Itoa(g)), func(context.Context) {
		err = r.distinctOpen(c, g, dur, &m)
	})
	return m, err
}

func (r *runner) distinctOpen(c contender, g int, dur time.Duration, m *distinctMeasure) error {
	return r.withContender(c, func(newLocker func(string) locker) error {
		if os.Getenv("BENCH_STATS") != "" {
			if err := r.resetStats(); err != nil {
				return err
			}
		}
		server0, err := r.serverCPU()
		if err != nil {
			return err
		}
		writes0 := writeCalls()
		client0, start := cpuTime(), time.Now()
		ops, err := parallel(g, dur, func(i int) func(context.Context) error {
			return pairOf(newLocker(fmt.Sprintf("bench:tp:%d", i)))
		})
		if err != nil {
			return err
		}
		pairs := ops * time.Since(start).Seconds()
		client := cpuTime() - client0
		writes := writeCalls() - writes0
		server1, err := r.serverCPU()
		if err != nil {
			return err
		}
		*m = distinctMeasure{ops: ops, client: float64(client.Microseconds()) / pairs, server: float64((server1 - server0).Microseconds()) / pairs,
			writes: float64(writes) / pairs}
		if os.Getenv("BENCH_STATS") != "" {
			r.printStats(c.Name, pairs)
		}
		return nil
	})
}

// serverCPU is the main server's CPU time so far (INFO cpu: user + sys).
func (r *runner) serverCPU() (time.Duration, error) {
	rc, err := r.client()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	info, err := rc.Do(context.Background(), rc.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		return 0, err
	}
	var total float64
	for _, line := range splitLines(info) {
		for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := cut(line, f); ok {
				x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return 0, err
				}
				total += x
			}
		}
	}
	return time.Duration(total * float64(time.Second)), nil
}

// bareLocker is the bare Redisson pair as a locker, so that the limit runs
// through scenario 2's own loop (pairOf: Unlock with context.Background).
type bareLocker struct {
	rc    rueidis.Client
	k     bareNames
	owner string
}

func (l *bareLocker) Lock(ctx context.Context) error { return bareLock(ctx, l.rc, l.k, l.owner) }
func (l *bareLocker) Unlock(ctx context.Context) error {
	return bareUnlock(ctx, l.rc, l.k, l.owner)
}

// printStats prints (BENCH_STATS=1) the commands per pair of the run just
// done on the emptied server: what each contender sends, inner script
// calls included.
func (r *runner) printStats(name string, pairs float64) {
	rc, err := r.client()
	if err != nil {
		return
	}
	defer rc.Close()
	info, err := rc.Do(context.Background(), rc.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return
	}
	fmt.Fprintf(os.Stderr, "%s:", name)
	for _, line := range splitLines(info) {
		rest, ok := cut(line, "cmdstat_")
		if !ok {
			continue
		}
		cmd, stats, _ := strings.Cut(rest, ":calls=")
		n, _, _ := strings.Cut(stats, ",")
		calls, _ := strconv.ParseFloat(n, 64)
		if calls/pairs >= 0.01 {
			fmt.Fprintf(os.Stderr, " %s %.2f", cmd, calls/pairs)
		}
	}
	fmt.Fprintln(os.Stderr)
}

func (r *runner) resetStats() error {
	rc, err := r.client()
	if err != nil {
		return err
	}
	defer rc.Close()
	return rc.Do(context.Background(), rc.B().ConfigResetstat().Build()).Error()
}

// writeCalls is this process's write system calls so far (/proc/self/io
// syscw; 0 where there is none): the client's flushes to the server.
func writeCalls() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range splitLines(string(b)) {
		if v, ok := cut(line, "syscw:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// sequentialCPU prints each contender's client CPU per pair on one
// goroutine, a pair at a time: each pair makes the same system calls
// whoever sends it (a write and a read per command), so the difference to
// the limit's row is the library's own CPU, whatever the load on the
// machine (it is CPU time, not wall time).
func (r *runner) sequentialCPU(cs []contender) error {
	const n = 3000
	for _, c := range cs {
		var err error
		pprof.Do(context.Background(), pprof.Labels("contender", c.Name, "goroutines", "1"), func(context.Context) {
			err = r.sequentialOne(c, n)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) sequentialOne(c contender, n int) error {
	return r.withContender(c, func(newLocker func(string) locker) error {
		pair := pairOf(newLocker("bench:seq"))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := pair(ctx); err != nil { // warm: scripts loaded
			return err
		}
		before, cpu := mallocs(), cpuTime()
		for range n {
			if err := pair(ctx); err != nil {
				return err
			}
		}
		fmt.Fprintf(os.Stderr, "   1 goroutine: %-30s client %5.1f µs/pair, %4.1f allocs/pair\n", c.Name,
			float64((cpuTime()-cpu).Microseconds())/float64(n), float64(mallocs()-before)/float64(n))
		return nil
	})
}

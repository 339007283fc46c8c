package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/ratelimit"
)

// The rate-limit scenario (-ratelimit, issue 26): 64 goroutines in one
// process ask one key for one event at a time at 1,000/s with a burst of
// 100, for rateWindow, per library on a server of its own, then the same
// from two processes at once; the row is the events admitted against the
// most the rate allows (1,000 × window + 100), and the decisions per
// second. Then redisync's Wait: 64 waiters on one key
// at 1,000/s, each Wait's return time against the admission time its
// reservation computed (how late a waiter is admitted: p50, p99).
// (rueidislimiter, a fixed window on the client's clock, is not on the
// module proxy this machine reaches; its row is missing.)
const (
	rateLimit, rateBurst, rateGoroutines = 1000, 100, 64
	rateWindow                           = 10 * time.Second
)

// decider is one library's Allow of one event.
type decider func(ctx context.Context) (bool, error)

// rateLib is one library of the rate-limit rows; a child process opens it
// by name.
type rateLib struct {
	name string
	open func(addr string) (decider, func(), error)
}

var rateLibs = []rateLib{
	{"redisync ratelimit", func(addr string) (decider, func(), error) {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			return nil, nil, err
		}
		c := redisync.New(rc)
		l := ratelimit.New(c, "bench", ratelimit.PerSecond(rateLimit), rateBurst)
		return func(ctx context.Context) (bool, error) {
			res, err := l.Allow(ctx, "k")
			return res.Allowed > 0, err
		}, func() { c.Close(); rc.Close() }, nil
	}},
	{"go-redis/redis_rate v10", func(addr string) (decider, func(), error) {
		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: rateGoroutines})
		l := redis_rate.NewLimiter(rdb)
		limit := redis_rate.Limit{Rate: rateLimit, Burst: rateBurst, Period: time.Second}
		return func(ctx context.Context) (bool, error) {
			res, err := l.Allow(ctx, "k", limit)
			if err != nil {
				return false, err
			}
			return res.Allowed > 0, nil
		}, func() { rdb.Close() }, nil
	}},
}

// rateHammer runs rateGoroutines goroutines asking allow for one event at
// a time until end: the events admitted and the decisions made.
func rateHammer(allow decider, end time.Time) (admitted, calls int64, err error) {
	var nAdmitted, nCalls atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	errc := make(chan error, rateGoroutines)
	for range rateGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				ok, err := allow(ctx)
				if err != nil {
					errc <- err
					return
				}
				nCalls.Add(1)
				if ok {
					nAdmitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return nAdmitted.Load(), nCalls.Load(), <-errc
}

// rateChildFlag makes the binary the second process of a two-process rate
// row: it hammers the named library until the given end and prints
// "<admitted> <decisions>".
const rateChildFlag = "-rate-child"

func rateChild(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: -rate-child <library> <addr> <end, unix ns>")
		return 2
	}
	var endNs int64
	if _, err := fmt.Sscan(args[2], &endNs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for _, lib := range rateLibs {
		if lib.name != args[0] {
			continue
		}
		allow, closeFn, err := lib.open(args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer closeFn()
		admitted, calls, err := rateHammer(allow, time.Unix(0, endNs))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(admitted, calls)
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown library", args[0])
	return 2
}

// rateAccuracy is one row: lib's admitted events over rateWindow on a
// server of its own, from procs processes (1 or 2) of rateGoroutines each.
func rateAccuracy(lib rateLib, procs int) error {
	srv, err := redistest.StartMain()
	if err != nil {
		return err
	}
	defer srv.Kill()
	start := time.Now()
	end := start.Add(rateWindow)
	var cmd *exec.Cmd
	var out strings.Builder
	if procs == 2 {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cmd = exec.Command(self, rateChildFlag, lib.name, srv.Addr(), fmt.Sprint(end.UnixNano()))
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
	}
	allow, closeFn, err := lib.open(srv.Addr())
	if err != nil {
		return err
	}
	defer closeFn()
	admitted, calls, err := rateHammer(allow, end)
	if cmd != nil {
		if werr := cmd.Wait(); werr != nil && err == nil {
			err = fmt.Errorf("child: %v", werr)
		}
		var a, c int64
		if _, serr := fmt.Sscan(out.String(), &a, &c); serr != nil && err == nil {
			err = fmt.Errorf("child output %q: %v", out.String(), serr)
		}
		admitted, calls = admitted+a, calls+c
	}
	if err != nil {
		return fmt.Errorf("%s: %w", lib.name, err)
	}
	took := time.Since(start)
	most := float64(rateLimit)*rateWindow.Seconds() + rateBurst
	fmt.Printf("| %s | %d × %d | %d | %.1f%% | %.0f |\n", lib.name, procs, rateGoroutines, admitted,
		100*float64(admitted)/most, float64(calls)/took.Seconds())
	return nil
}

func runRateLimit() error {
	fmt.Printf("Measured %s, goroutines on one key at %d/s, burst %d, %v per row, each on a server of its own (`go run . -ratelimit`).\n\n",
		time.Now().Format("2006-01-02"), rateLimit, rateBurst, rateWindow)
	fmt.Println("| library | processes × goroutines | admitted | of rate × window + burst | decisions/s |")
	fmt.Println("|---|---|---|---|---|")
	for _, procs := range []int{1, 2} {
		for _, lib := range rateLibs {
			if err := rateAccuracy(lib, procs); err != nil {
				return err
			}
		}
	}
	return waitLateness()
}

// waitLateness runs rateGoroutines waiters, each calling Wait 20 times in
// a row, on one key at rateLimit/s: the queue of reservations never runs
// dry, so the i-th admission (after the burst) is due at start + (i -
// burst) × T. Each return, in order, against that time is how late a
// waiter is admitted (the reply's trip and the timer's wake-up; Wait never
// returns early).
func waitLateness() error {
	srv, err := redistest.StartMain()
	if err != nil {
		return err
	}
	defer srv.Kill()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		return err
	}
	defer rc.Close()
	c := redisync.New(rc)
	defer c.Close()
	l := ratelimit.New(c, "bench-wait", ratelimit.PerSecond(rateLimit), rateBurst)
	var mu sync.Mutex
	var returned []time.Time
	var wg sync.WaitGroup
	ctx := context.Background()
	start := time.Now()
	for range rateGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if err := l.Wait(ctx, "k", 1); err != nil {
					fmt.Fprintln(os.Stderr, "wait:", err)
					return
				}
				mu.Lock()
				returned = append(returned, time.Now())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(returned, func(i, j int) bool { return returned[i].Before(returned[j]) })
	T := time.Second / rateLimit
	var late []time.Duration
	for i, r := range returned {
		due := start.Add(time.Duration(max(i+1-rateBurst, 0)) * T)
		late = append(late, r.Sub(due))
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	if len(late) == 0 {
		return fmt.Errorf("no Wait returned")
	}
	fmt.Printf("\nWait, %d goroutines × 20 in a row on one key at %d/s: %d admissions; late against the schedule p50 %v, p99 %v\n",
		rateGoroutines, rateLimit, len(late), late[len(late)/2].Round(time.Microsecond), late[len(late)*99/100].Round(time.Microsecond))
	return nil
}

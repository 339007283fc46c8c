package main

import (
	"context"
	"fmt"
	"os"
	"sort"
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
// 100, for rateWindow, per library on a server of its own; the row is the
// events admitted against the most the rate allows (1,000 × window + 100),
// and the decisions per second. Then redisync's Wait: 64 waiters on one key
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

func rateAccuracy(name string, open func(addr string) (decider, func(), error)) error {
	srv, err := redistest.StartMain()
	if err != nil {
		return err
	}
	defer srv.Kill()
	allow, closeFn, err := open(srv.Addr())
	if err != nil {
		return err
	}
	defer closeFn()
	var admitted, calls atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	start := time.Now()
	end := start.Add(rateWindow)
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
				calls.Add(1)
				if ok {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errc)
	if err := <-errc; err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	most := float64(rateLimit)*took.Seconds() + rateBurst
	fmt.Printf("| %s | %d | %.1f%% | %.0f |\n", name, admitted.Load(), 100*float64(admitted.Load())/most,
		float64(calls.Load())/took.Seconds())
	return nil
}

func runRateLimit() error {
	fmt.Printf("Measured %s, %d goroutines on one key at %d/s, burst %d, %v per library (`go run . -ratelimit`).\n\n",
		time.Now().Format("2006-01-02"), rateGoroutines, rateLimit, rateBurst, rateWindow)
	fmt.Println("| library | admitted | of rate × window + burst | decisions/s |")
	fmt.Println("|---|---|---|---|")
	if err := rateAccuracy("redisync ratelimit", func(addr string) (decider, func(), error) {
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
	}); err != nil {
		return err
	}
	if err := rateAccuracy("go-redis/redis_rate v10", func(addr string) (decider, func(), error) {
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
	}); err != nil {
		return err
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

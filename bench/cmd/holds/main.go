// Command holds is the watchdog scenario of issue 24: one Client keeps many
// rlock holds renewed on a redis-server of its own, and the run reports how
// many it lost, the client's CPU (getrusage of this process over the hold
// window) and the server's (INFO cpu). It is a benchmark scenario, not a
// test: the numbers depend on the machine.
//
//	cd bench && go run ./cmd/holds -holds 100000 -lease 3s -for 60s
//	cd bench && go run ./cmd/holds -holds 1000000 -lease 30s -for 2m
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

func main() {
	holds := flag.Int("holds", 100000, "locks the one Client holds")
	lease := flag.Duration("lease", 3*time.Second, "the watchdog lease (WithWatchdogTimeout)")
	window := flag.Duration("for", time.Minute, "how long the holds are kept once all are taken")
	workers := flag.Int("workers", 256, "goroutines taking the locks")
	addr := flag.String("addr", "", "a redis-server to use (default: start one)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the hold window to this file")
	flag.Parse()
	cpuProfile = *profile
	if err := run(*holds, *lease, *window, *workers, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "holds:", err)
		os.Exit(1)
	}
}

func run(n int, lease, window time.Duration, workers int, addr string) error {
	if addr == "" {
		srv, err := redistest.StartMain()
		if err != nil {
			return err
		}
		defer srv.Kill()
		addr = srv.Addr()
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		return err
	}
	defer rc.Close()
	var lost, renewed, failed, rounds atomic.Int64
	c := redisync.New(rc, redisync.WithWatchdogTimeout(lease), redisync.WithObserver(redisync.ObserverFunc(func(ev redisync.Event) {
		switch ev.Kind {
		case redisync.EventLost:
			lost.Add(1)
		case redisync.EventRenewed:
			renewed.Add(int64(ev.Count))
			rounds.Add(1)
		case redisync.EventRenewFailed:
			if failed.Add(int64(ev.Count)) == int64(ev.Count) {
				fmt.Printf("  first failed renewal: %v\n", ev.Err)
			}
		}
	})))
	defer c.Close()
	ctx := context.Background()

	fmt.Printf("holds %d, lease %v, window %v\n", n, lease, window)
	mus := make([]*rlock.Mutex, n)
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var lockErr atomic.Value
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				m := rlock.New(c, "hold:"+strconv.Itoa(i))
				if err := m.Lock(ctx); err != nil {
					lockErr.Store(err)
					return
				}
				mus[i] = m
			}
		}()
	}
	wg.Wait()
	if err, _ := lockErr.Load().(error); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	fmt.Printf("taken in %v (lost meanwhile: %d)\n", time.Since(start).Round(time.Millisecond), lost.Load())

	lost0, renewed0, failed0, rounds0 := lost.Load(), renewed.Load(), failed.Load(), rounds.Load()
	cpu0, srv0 := ownCPU(), serverCPU(ctx, rc)
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	t0 := time.Now()
	for el := time.Duration(0); el < window; el = time.Since(t0) {
		time.Sleep(min(10*time.Second, window-el))
		fmt.Printf("  %4.0fs: lost %d, renewed %d, failed renewals %d\n", time.Since(t0).Seconds(),
			lost.Load()-lost0, renewed.Load()-renewed0, failed.Load()-failed0)
	}
	wall := time.Since(t0)
	cpu, srv := ownCPU()-cpu0, serverCPU(ctx, rc)-srv0
	pprof.StopCPUProfile()
	stats, _ := rc.Do(ctx, rc.B().Info().Section("commandstats").Build()).ToString()
	held := 0
	for _, m := range mus {
		if m.Err() == nil {
			held++
		}
	}
	fmt.Printf("lost %d of %d over %v (still held: %d); renewed %d holds (%.1f per hold) in %d rounds, failed renewals %d\n",
		lost.Load()-lost0, n, wall.Round(time.Millisecond), held, renewed.Load()-renewed0,
		float64(renewed.Load()-renewed0)/float64(n), rounds.Load()-rounds0, failed.Load()-failed0)
	fmt.Printf("client CPU %.2f%% of a core (%v); server CPU %.2f%% of a core (%v)\n",
		100*cpu.Seconds()/wall.Seconds(), cpu.Round(time.Millisecond), 100*srv.Seconds()/wall.Seconds(), srv.Round(time.Millisecond))

	fmt.Print("server commands over the run (INFO commandstats):\n")
	for _, line := range strings.Split(stats, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":calls="); ok {
			calls, _, _ := strings.Cut(v, ",")
			fmt.Printf("  %s %s\n", strings.TrimPrefix(k, "cmdstat_"), calls)
		}
	}
	// No Unlock: the server goes with the run (and Close ends the holds).
	return nil
}

var cpuProfile string

// ownCPU is this process's user + system time (getrusage).
func ownCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is the server's used_cpu_user + used_cpu_sys (INFO cpu).
func serverCPU(ctx context.Context, rc rueidis.Client) time.Duration {
	info, err := rc.Do(ctx, rc.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		return 0
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// holdSpec is one watchdog-scale run: n holds on one Client with the given
// lease, watched for window once they are all taken.
type holdSpec struct {
	n             int
	lease, window time.Duration
	profile       string // a directory for cpu.pprof and allocs.pprof of the window; "": none
}

// parseHoldSpec reads "N:LEASE:WINDOW" (100000:3s:60s).
func parseHoldSpec(s string) (holdSpec, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return holdSpec{}, fmt.Errorf("-watchdog %q: want N:LEASE:WINDOW, e.g. 100000:3s:60s", s)
	}
	n, err := strconv.Atoi(strings.ReplaceAll(parts[0], "_", ""))
	if err != nil || n <= 0 {
		return holdSpec{}, fmt.Errorf("-watchdog %q: bad hold count", s)
	}
	lease, err := time.ParseDuration(parts[1])
	if err != nil || lease <= 0 {
		return holdSpec{}, fmt.Errorf("-watchdog %q: bad lease", s)
	}
	window, err := time.ParseDuration(parts[2])
	if err != nil || window <= 0 {
		return holdSpec{}, fmt.Errorf("-watchdog %q: bad window", s)
	}
	return holdSpec{n: n, lease: lease, window: window}, nil
}

// runWatchdog is `go run . -watchdog N:LEASE:WINDOW`: scenario 5 alone, at
// the chosen size, on a server of its own.
func runWatchdog(spec holdSpec) error {
	s, err := redistest.StartMain()
	if err != nil {
		return err
	}
	defer s.Kill()
	r := &runner{addr: s.Addr(), log: os.Stderr}
	r.report.Meta = meta(r, false)
	if err := r.holdMany(spec); err != nil {
		return err
	}
	fmt.Print(r.report.markdown())
	return nil
}

// 5. Watchdog scale: hold many locks in one process and measure what their
// renewal costs — scripts per second on the server, client CPU and memory.
func (r *runner) watchdogScale() error {
	sizes := []int{10_000, 100_000}
	if r.quick {
		sizes = []int{10_000}
	}
	const lease = 3 * time.Second // renewed every second
	for _, n := range sizes {
		if err := r.holdMany(holdSpec{n: n, lease: lease, window: 4 * lease / 3}); err != nil { // four ticks
			return err
		}
	}
	return nil
}

func (r *runner) holdMany(spec holdSpec) error {
	n, lease, window := spec.n, spec.lease, spec.window
	rc, err := r.client()
	if err != nil {
		return err
	}
	defer rc.Close()
	c := redisync.New(rc, redisync.WithWatchdogTimeout(lease))
	defer c.Close()
	ctx := context.Background()
	locks := make([]*rlock.Mutex, n)
	const workers = 64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	var retries atomic.Int64
	taken := time.Now()
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += workers {
				locks[i] = rlock.New(c, fmt.Sprintf("bench:wd:%d", i))
				// A loaded machine may time an acquire out (the server busy
				// with the renewals of the holds taken so far): try again.
				var err error
				for try := 0; try < 5; try++ {
					if err = locks[i].Lock(ctx); err == nil || !errors.Is(err, context.DeadlineExceeded) {
						break
					}
					retries.Add(1)
				}
				if err != nil {
					errs[g] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(r.log, "   %d holds taken in %v (%d acquires timed out and were tried again)\n", n, time.Since(taken).Round(time.Millisecond), retries.Load())
	calls := func() int64 {
		return commandCalls(ctx, rc, "evalsha") + commandCalls(ctx, rc, "eval")
	}
	stopProfile, err := startProfile(spec.profile)
	if err != nil {
		return err
	}
	gc0 := gcSample()
	cpu0, srv0, calls0, t0 := cpuTime(), serverCPU(ctx, r), calls(), time.Now()
	time.Sleep(window)
	cpu1, srv1, calls1, elapsed := cpuTime(), serverCPU(ctx, r), calls(), time.Since(t0)
	gc1 := gcSample()
	if err := stopProfile(); err != nil {
		return err
	}
	heap := heapInUse()
	lost := 0
	for _, l := range locks {
		if l.Err() != nil {
			lost++
		}
	}
	scripts := float64(calls1 - calls0)
	ticks := elapsed.Seconds() / (lease / 3).Seconds()
	scenario := fmt.Sprintf("5 watchdog, %d held locks", n)
	if lease != 3*time.Second || window != 4*lease/3 {
		scenario += fmt.Sprintf(", lease %v, window %v", lease, window)
	}
	clientCPU := (cpu1 - cpu0).Seconds()
	r.add(Result{Scenario: scenario, Contender: "redisync rlock",
		Value: scripts / elapsed.Seconds(), Unit: "renewal scripts/s",
		Extra: map[string]float64{
			"lost":                float64(lost),
			"client_cpu_percent":  100 * clientCPU / elapsed.Seconds(),
			"server_cpu_percent":  100 * (srv1 - srv0) / elapsed.Seconds(),
			"holds_per_script":    float64(n) * ticks / scripts,
			"scripts_per_tick":    scripts / ticks,
			"heap_bytes_per_lock": float64(heap) / float64(n),
			"gc_cycles":           float64(gc1.cycles - gc0.cycles),
			"gc_cpu_fraction":     (gc1.cpu - gc0.cpu) / max(clientCPU, 1e-9), // of the client's CPU in the window
		}})
	fmt.Fprintf(r.log, "   lost %d; client CPU %.1f%% of a core (GC %.0f%% of it, %d cycles); server CPU %.1f%%; %.0f scripts/s, %.0f holds/script; heap %.0f B/hold\n",
		lost, 100*clientCPU/elapsed.Seconds(), 100*(gc1.cpu-gc0.cpu)/max(clientCPU, 1e-9), gc1.cycles-gc0.cycles,
		100*(srv1-srv0)/elapsed.Seconds(), scripts/elapsed.Seconds(), float64(n)*ticks/scripts, float64(heap)/float64(n))
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += workers {
				_ = locks[i].Unlock(ctx)
			}
		}()
	}
	wg.Wait()
	return nil
}

// startProfile starts a CPU profile into dir/cpu.pprof (dir "": none) and
// writes dir/allocs0.pprof; the returned stop ends it and writes
// dir/allocs.pprof (the window's: go tool pprof -diff_base allocs0.pprof).
func startProfile(dir string) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeAllocs(filepath.Join(dir, "allocs0.pprof")); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return err
		}
		return writeAllocs(filepath.Join(dir, "allocs.pprof"))
	}, nil
}

// writeAllocs writes the allocs profile so far to path.
func writeAllocs(path string) error {
	runtime.GC() // the profile is as of the last cycle
	a, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(a, 0); err != nil {
		a.Close()
		return err
	}
	return a.Close()
}

type gcStats struct {
	cycles uint32
	cpu    float64 // seconds of CPU the GC took (runtime/metrics' estimate)
}

func gcSample() gcStats {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	st := gcStats{cycles: m.NumGC}
	if s[0].Value.Kind() == metrics.KindFloat64 {
		st.cpu = s[0].Value.Float64()
	}
	return st
}

// serverCPU is the main server's CPU time so far (INFO cpu, user and
// system), in seconds.
func serverCPU(ctx context.Context, r *runner) float64 {
	rc, err := r.client()
	if err != nil {
		return 0
	}
	defer rc.Close()
	info, err := rc.Do(ctx, rc.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		return 0
	}
	var total float64
	for _, line := range splitLines(info) {
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := cut(line, k); ok {
				f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				total += f
			}
		}
	}
	return total
}

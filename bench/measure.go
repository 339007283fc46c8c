package main

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// latencies summarizes a sample of durations.
type latencies struct {
	P50, P99, Mean time.Duration
	N              int
}

func summarize(d []time.Duration) latencies {
	if len(d) == 0 {
		return latencies{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var sum time.Duration
	for _, v := range s {
		sum += v
	}
	return latencies{P50: s[len(s)/2], P99: s[min(len(s)-1, len(s)*99/100)], Mean: sum / time.Duration(len(s)), N: len(s)}
}

// mallocs counts heap allocations so far (all goroutines).
func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// sequential runs pair n times on one goroutine and returns each pair's
// duration and the allocations per pair.
func sequential(n int, pair func() error) ([]time.Duration, float64, error) {
	out := make([]time.Duration, 0, n)
	runtime.GC()
	before := mallocs()
	for range n {
		start := time.Now()
		if err := pair(); err != nil {
			return nil, 0, err
		}
		out = append(out, time.Since(start))
	}
	return out, float64(mallocs()-before) / float64(n), nil
}

// parallel runs g goroutines, each calling its own pair in a loop, for d;
// it returns pairs per second. newPair is called once per goroutine.
func parallel(g int, d time.Duration, newPair func(i int) func(ctx context.Context) error) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var ops atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	pairs := make([]func(context.Context) error, g)
	for i := range pairs {
		pairs[i] = newPair(i)
	}
	start := time.Now()
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := pairs[i](ctx); err != nil {
					if ctx.Err() == nil {
						once.Do(func() { firstErr = err })
					}
					return
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(ops.Load()) / time.Since(start).Seconds(), firstErr
}

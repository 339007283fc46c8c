package rlock

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// The benchmarks compare rlock with the limit: the same acquire and release
// scripts called raw through rueidis, with no handle, watchdog or wake-up
// bookkeeping. Compare ns/op of a pair in one run (ratios, not absolutes).

func benchEnv(b *testing.B) (*redistest.Server, *redisync.Client) {
	srv := redistest.Start(b)
	rc := srv.Client(b)
	c := redisync.New(rc)
	b.Cleanup(func() { c.Close() })
	return srv, c
}

func BenchmarkLockUnlock(b *testing.B) {
	b.Run("sequential", func(b *testing.B) {
		_, c := benchEnv(b)
		m := New(c, "bench:seq")
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := m.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, g := range []int{64, 1024} {
		b.Run(fmt.Sprintf("parallel-distinct-keys-%d", g), func(b *testing.B) {
			_, c := benchEnv(b)
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(max(1, g/runtimeProcs()))
			b.RunParallel(func(pb *testing.PB) {
				m := New(c, fmt.Sprintf("bench:par:%d", n.Add(1)))
				ctx := context.Background()
				for pb.Next() {
					if err := m.Lock(ctx); err != nil {
						b.Fatal(err)
					}
					if err := m.Unlock(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

func BenchmarkRawScripts(b *testing.B) {
	b.Run("sequential", func(b *testing.B) {
		_, c := benchEnv(b)
		e := eng(c)
		k := keysFor("bench:raw")
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			rawPair(b, ctx, e.RC, k, "owner:1")
		}
	})
	for _, g := range []int{64, 1024} {
		b.Run(fmt.Sprintf("parallel-distinct-keys-%d", g), func(b *testing.B) {
			_, c := benchEnv(b)
			e := eng(c)
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(max(1, g/runtimeProcs()))
			b.RunParallel(func(pb *testing.PB) {
				i := n.Add(1)
				k := keysFor(fmt.Sprintf("bench:raw:%d", i))
				owner := fmt.Sprintf("owner:%d", i)
				ctx := context.Background()
				for pb.Next() {
					rawPair(b, ctx, e.RC, k, owner)
				}
			})
		})
	}
}

// BenchmarkHandoff measures release-to-acquire latency between two handles
// on one Client: each iteration is one hand-off through pub/sub.
func BenchmarkHandoff(b *testing.B) {
	_, c := benchEnv(b)
	ctx := context.Background()
	a, w := New(c, "bench:handoff"), New(c, "bench:handoff")
	if err := a.Lock(ctx); err != nil {
		b.Fatal(err)
	}
	holder, waiter := a, w
	b.ReportAllocs()
	for b.Loop() {
		got := make(chan error, 1)
		go func() { got <- waiter.Lock(ctx) }()
		time.Sleep(100 * time.Microsecond) // let it block
		if err := holder.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := <-got; err != nil {
			b.Fatal(err)
		}
		holder, waiter = waiter, holder
	}
	_ = holder.Unlock(ctx)
}

package redisync_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// BenchmarkPrimitives puts the lock kinds side by side in one run, on one
// server each: compare each kind's ns/op (and handoff-µs) with rlock's, as
// ratios; absolute times on a shared machine are noise.
//
//   - sequential: one goroutine, Lock+Unlock, uncontended;
//   - parallel-distinct-keys-64: 64 goroutines, each on its own name;
//   - handoff: one holder, one blocked waiter; handoff-µs is the time from
//     the holder's Unlock call to the waiter's Lock returning.
//
// For rwlock-read the holder in the hand-off is a writer (readers do not
// block each other), so it measures write release to read grant.
func BenchmarkPrimitives(b *testing.B) {
	kinds := []struct {
		name   string
		holder func(c *redisync.Client, name string) redisync.Locker
		waiter func(c *redisync.Client, name string) redisync.Locker
	}{
		{"rlock", newRlock, newRlock},
		{"fairlock", newFairlock, newFairlock},
		{"rwlock-write", newWriter, newWriter},
		{"rwlock-read", newWriter, newReader},
	}
	for _, k := range kinds {
		b.Run(k.name+"/sequential", func(b *testing.B) {
			c := benchClient(b)
			l := k.waiter(c, "bench:seq")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				lockUnlock(b, ctx, l)
			}
		})
		b.Run(k.name+"/parallel-distinct-keys-64", func(b *testing.B) {
			c := benchClient(b)
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				l := k.waiter(c, fmt.Sprintf("bench:par:%d", n.Add(1)))
				ctx := context.Background()
				for pb.Next() {
					lockUnlock(b, ctx, l)
				}
			})
		})
		b.Run(k.name+"/handoff", func(b *testing.B) {
			c := benchClient(b)
			ctx := context.Background()
			var total time.Duration
			b.ReportAllocs()
			for b.Loop() {
				holder, waiter := k.holder(c, "bench:handoff"), k.waiter(c, "bench:handoff")
				if err := holder.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				got := make(chan time.Time, 1)
				go func() {
					if err := waiter.Lock(ctx); err != nil {
						b.Error(err)
					}
					got <- time.Now()
				}()
				time.Sleep(200 * time.Microsecond) // let it block (and queue)
				start := time.Now()
				if err := holder.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
				total += (<-got).Sub(start)
				if err := waiter.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N), "handoff-µs")
		})
	}
}

func newRlock(c *redisync.Client, name string) redisync.Locker    { return rlock.New(c, name) }
func newFairlock(c *redisync.Client, name string) redisync.Locker { return fairlock.New(c, name) }
func newWriter(c *redisync.Client, name string) redisync.Locker {
	return rwlock.New(c, name).WriteLocker()
}
func newReader(c *redisync.Client, name string) redisync.Locker {
	return rwlock.New(c, name).ReadLocker()
}

func benchClient(b *testing.B) *redisync.Client {
	srv := redistest.Start(b)
	c := redisync.New(srv.Client(b))
	b.Cleanup(func() { c.Close() })
	return c
}

func lockUnlock(b *testing.B, ctx context.Context, l redisync.Locker) {
	if err := l.Lock(ctx); err != nil {
		b.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRedlock compares an uncontended Lock+Unlock of a Redlock over 3
// and 5 independent servers with rlock on one server, in one run. Phase 1
// and phase 2 of the acquisition and the release each fan out to every node
// in parallel, so a Redlock should cost about three round trips (rlock:
// two), not 3N.
func BenchmarkRedlock(b *testing.B) {
	b.Run("rlock-1-node", func(b *testing.B) {
		l := rlock.New(benchClient(b), "bench:redlock")
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			lockUnlock(b, ctx, l)
		}
	})
	for _, n := range []int{3, 5} {
		b.Run(fmt.Sprintf("redlock-%d-nodes", n), func(b *testing.B) {
			clients := make([]*redisync.Client, n)
			for i := range clients {
				clients[i] = benchClient(b)
			}
			l := redlock.New(clients, "bench:redlock")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				lockUnlock(b, ctx, l)
			}
		})
	}
}

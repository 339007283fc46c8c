package semaphore

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// BenchmarkAcquireRelease measures permit acquire+release pairs: one
// goroutine, then 64 goroutines with a permit each (no waiting) and with 8
// permits among them (queueing). Compare with rlock's BenchmarkLockUnlock in
// the same run, as ratios.
func BenchmarkAcquireRelease(b *testing.B) {
	env := func(b *testing.B) *redisync.Client {
		srv := redistest.Start(b)
		c := redisync.New(srv.Client(b))
		b.Cleanup(func() { c.Close() })
		return c
	}
	b.Run("sequential", func(b *testing.B) {
		s := New(env(b), "bench:sem", 1)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			acquireRelease(b, ctx, s)
		}
	})
	for _, capacity := range []int{64, 8} {
		b.Run(fmt.Sprintf("parallel-64-capacity-%d", capacity), func(b *testing.B) {
			c := env(b)
			b.ReportAllocs()
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				s := New(c, "bench:sem", capacity)
				ctx := context.Background()
				for pb.Next() {
					acquireRelease(b, ctx, s)
				}
			})
		})
	}
}

func acquireRelease(b *testing.B, ctx context.Context, s *Semaphore) {
	p, err := s.Acquire(ctx, 1)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Release(ctx); err != nil {
		b.Fatal(err)
	}
}

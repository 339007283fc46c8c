package multilock

import (
	"context"
	"fmt"
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// BenchmarkThreeComponents measures an uncontended Lock+Unlock of a
// multilock over three rlocks: in one hash slot on one Client (one script per
// round) against spread over three servers (one TryLock per component).
// Compare the two in the same run, as a ratio.
func BenchmarkThreeComponents(b *testing.B) {
	run := func(b *testing.B, m *Mutex) {
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
	}
	b.Run("same-slot", func(b *testing.B) {
		srv := redistest.Start(b)
		c := redisync.New(srv.Client(b))
		b.Cleanup(func() { c.Close() })
		run(b, New(rlock.New(c, "{t}:a"), rlock.New(c, "{t}:b"), rlock.New(c, "{t}:c")))
	})
	b.Run("spread-3-servers", func(b *testing.B) {
		var parts []redisync.Locker
		for i, srv := range redistest.StartN(b, 3) {
			c := redisync.New(srv.Client(b))
			b.Cleanup(func() { c.Close() })
			parts = append(parts, rlock.New(c, fmt.Sprintf("part:%d", i)))
		}
		run(b, New(parts...))
	})
}

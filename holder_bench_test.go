package redisync_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// BenchmarkHolderInfo measures what recording holder metadata costs
// (redisync.WithHolderInfo): a Lock+Unlock (an Acquire+Release for the
// semaphore) with recording on and with it off, against one server,
// alternating iteration by iteration so both see the same load. It reports
// the ratio on/off; the default (on) is worth it while that stays near 1.
func BenchmarkHolderInfo(b *testing.B) {
	srv := redistest.Start(b)
	on := redisync.New(srv.Client(b), redisync.WithLabel("bench"))
	off := redisync.New(srv.Client(b), redisync.WithHolderInfo(false))
	b.Cleanup(func() { on.Close(); off.Close() })
	ctx := context.Background()
	kinds := []struct {
		name string
		op   func(c *redisync.Client) func()
	}{
		{"rlock", func(c *redisync.Client) func() {
			m := rlock.New(c, "bench:info:rlock")
			return func() {
				if err := m.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				if err := m.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"semaphore", func(c *redisync.Client) func() {
			s := semaphore.New(c, "bench:info:sem", 4)
			return func() {
				p, err := s.Acquire(ctx, 1)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			withInfo, without := k.op(on), k.op(off)
			var tOn, tOff time.Duration
			for b.Loop() {
				start := time.Now()
				withInfo()
				mid := time.Now()
				without()
				tOn += mid.Sub(start)
				tOff += time.Since(mid)
			}
			n := float64(b.N)
			b.ReportMetric(float64(tOn.Nanoseconds())/n, "ns-on/op")
			b.ReportMetric(float64(tOff.Nanoseconds())/n, "ns-off/op")
			b.ReportMetric(float64(tOn)/float64(tOff), "on/off")
		})
	}
}

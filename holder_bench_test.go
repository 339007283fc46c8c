package redisync_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// BenchmarkHolderInfo measures what recording holder metadata costs
// (redisync.WithHolderInfo): a Lock+Unlock (an Acquire+Release for the
// semaphore) with recording on and with it off, alternating iteration by
// iteration so both see the same load. It reports the ratio on/off of the
// wall time (noisy on a loaded machine) and of the servers' own time in
// the scripts (INFO commandstats, one server each: steadier); the default
// (on) is worth it while both stay near 1.
func BenchmarkHolderInfo(b *testing.B) {
	srvOn, srvOff := redistest.Start(b), redistest.Start(b)
	rcOn, rcOff := srvOn.Client(b), srvOff.Client(b)
	on := redisync.New(rcOn, redisync.WithLabel("bench"))
	off := redisync.New(rcOff, redisync.WithHolderInfo(false))
	b.Cleanup(func() { on.Close(); off.Close() })
	scriptUsec := func(rc rueidis.Client) float64 {
		info, err := rc.Do(context.Background(), rc.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		var total float64
		for _, line := range strings.Split(info, "\n") {
			if strings.HasPrefix(line, "cmdstat_evalsha:") || strings.HasPrefix(line, "cmdstat_eval:") {
				for _, f := range strings.Split(strings.TrimSpace(line[strings.IndexByte(line, ':')+1:]), ",") {
					if v, ok := strings.CutPrefix(f, "usec="); ok {
						n, _ := strconv.ParseFloat(v, 64)
						total += n
					}
				}
			}
		}
		return total
	}
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
			usOn, usOff := scriptUsec(rcOn), scriptUsec(rcOff)
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
			b.ReportMetric((scriptUsec(rcOn)-usOn)/(scriptUsec(rcOff)-usOff), "server-on/off")
		})
	}
}

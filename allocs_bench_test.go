package redisync_test

import (
	"context"
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/semaphore"
)

// BenchmarkAllocsPerPair reports the allocations of one uncontended
// Lock+Unlock (allocs/op) of each kind, with a cancellable ctx — a
// request's context, the common case, which costs the library more than
// context.Background: its cancellation has to be watched — and default
// options (watchdog mode). The target is at most 10 (issue 24). Run with
// go test -run '^$' -bench AllocsPerPair -benchmem.
func BenchmarkAllocsPerPair(b *testing.B) {
	kinds := []struct {
		name string
		new  func(c *redisync.Client, name string) redisync.Locker
	}{
		{"rlock", newRlock},
		{"fairlock", newFairlock},
		{"rwlock-write", newWriter},
		{"rwlock-read", newReader},
		{"semaphore", func(c *redisync.Client, name string) redisync.Locker { return semaphore.New(c, name, 1).Locker(1) }},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			c := benchClient(b)
			l := k.new(c, "bench:allocs")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			lockUnlock(b, ctx, l) // the scripts' digests are learned
			b.ReportAllocs()
			for b.Loop() {
				lockUnlock(b, ctx, l)
			}
		})
	}
}

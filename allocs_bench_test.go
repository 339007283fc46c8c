package redisync_test

import (
	"context"
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/semaphore"
)

// allocKinds are the lock kinds whose pairs the allocation benchmarks count.
var allocKinds = []struct {
	name string
	new  func(c *redisync.Client, name string) redisync.Locker
}{
	{"rlock", newRlock},
	{"fairlock", newFairlock},
	{"rwlock-write", newWriter},
	{"rwlock-read", newReader},
	{"semaphore", func(c *redisync.Client, name string) redisync.Locker { return semaphore.New(c, name, 1).Locker(1) }},
}

// BenchmarkAllocsPerPair reports the allocations of one uncontended
// Lock+Unlock (allocs/op) of each kind, with a cancellable ctx — a
// request's context, the common case, which costs the library more than
// context.Background: its cancellation has to be watched — and default
// options (watchdog mode). The target is at most 10 (issue 24). Run with
// go test -run '^$' -bench AllocsPerPair -benchmem.
func BenchmarkAllocsPerPair(b *testing.B) {
	for _, k := range allocKinds {
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

// BenchmarkAllocsPerPairUncancellableUnlock is BenchmarkAllocsPerPair with
// the Unlock of the package docs' idiom, defer mu.Unlock(
// context.WithoutCancel(ctx)): a ctx that cannot end, which the release
// runs on as a task Close can still give up. The target is the same.
func BenchmarkAllocsPerPairUncancellableUnlock(b *testing.B) {
	for _, k := range allocKinds {
		b.Run(k.name, func(b *testing.B) {
			c := benchClient(b)
			l := k.new(c, "bench:allocs")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			lockUnlockWith(b, ctx, context.WithoutCancel(ctx), l)
			b.ReportAllocs()
			for b.Loop() {
				lockUnlockWith(b, ctx, context.WithoutCancel(ctx), l)
			}
		})
	}
}

func lockUnlockWith(b *testing.B, lockCtx, unlockCtx context.Context, l redisync.Locker) {
	if err := l.Lock(lockCtx); err != nil {
		b.Fatal(err)
	}
	if err := l.Unlock(unlockCtx); err != nil {
		b.Fatal(err)
	}
}

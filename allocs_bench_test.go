package redisync_test

import (
	"context"
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
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

// TestPairAllocationsStayWithinTheTarget pins the allocations of an
// uncontended Lock+Unlock of every kind at issue 24's target, at most 10,
// with a cancellable ctx for Lock and either that ctx or the docs' idiom
// context.WithoutCancel(ctx) for Unlock (which once cost 19: a release on a
// ctx that cannot end ran on two cancel contexts and an AfterFunc of its
// own). It counts the whole process's allocations, rueidis's too (the
// fewest of three counts), and
// skips under the race detector, which changes what allocates.
func TestPairAllocationsStayWithinTheTarget(t *testing.T) {
	if raceOn {
		t.Skip("allocation counts are not the program's under -race")
	}
	const target = 10
	for _, k := range allocKinds {
		for _, unlock := range []struct {
			name string
			ctx  func(context.Context) context.Context
		}{
			{"cancellable", func(ctx context.Context) context.Context { return ctx }},
			{"uncancellable", context.WithoutCancel},
		} {
			t.Run(k.name+"/"+unlock.name, func(t *testing.T) {
				srv := redistest.Start(t)
				c := redisync.New(srv.Client(t))
				defer c.Close()
				l := k.new(c, "allocs:"+k.name)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				uctx := unlock.ctx(ctx)
				pair := func() {
					if err := l.Lock(ctx); err != nil {
						t.Fatal(err)
					}
					if err := l.Unlock(uctx); err != nil {
						t.Fatal(err)
					}
				}
				pair() // the scripts' digests are learned
				// The fewest of three counts: the Client's and rueidis's
				// background work (a ring grown, a look at the eviction
				// policy) lands in one of them now and then.
				n := testing.AllocsPerRun(200, pair)
				for range 2 {
					n = min(n, testing.AllocsPerRun(200, pair))
				}
				if n > target {
					t.Errorf("%.1f allocations per pair, more than %d", n, target)
				}
			})
		}
	}
}

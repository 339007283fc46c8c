//go:build interop

package interop

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
)

// TestFairLockExcludesBothWays: redisync's fairlock and Redisson's RFairLock
// on one name exclude each other (both hold Redisson's lock hash). Their
// queues are separate (issue 16 item 4, docs/redisson.md): waiters of one
// library are not served in arrival order with the other's, and are woken
// by the other's release only through their bounded poll.
func TestFairLockExcludesBothWays(t *testing.T) {
	c := goClient(t)
	ctx := context.Background()
	for _, name := range names(t, java) {
		mu := fairlock.New(c, name)
		them := tid()
		java.lock(t, "fair", name, them, 0)
		if ok, err := mu.TryLock(ctx); err != nil || ok {
			t.Fatalf("%s: fairlock TryLock while RFairLock holds = %v, %v", name, ok, err)
		}
		java.unlock(t, "fair", name, them)
		if ok, err := mu.TryLock(ctx); err != nil || !ok {
			t.Fatalf("%s: fairlock TryLock after RFairLock released = %v, %v", name, ok, err)
		}
		if java.try(t, "fair", name, tid()) {
			t.Fatalf("%s: RFairLock granted while fairlock holds", name)
		}
		if err := mu.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		them = tid()
		if !java.try(t, "fair", name, them) {
			t.Fatalf("%s: RFairLock refused after fairlock released", name)
		}
		java.unlock(t, "fair", name, them)
		assertGone(t, name)
	}
}

// TestFairLockRedissonQueueOneArrivalOrder: with WithRedissonQueue, Java and
// Go waiters queue in Redisson's RFairLock queue and are granted in one
// arrival order, each woken by the previous holder's release (Go's max poll
// is 30 s, Java's holds are 30 s watchdog leases).
func TestFairLockRedissonQueueOneArrivalOrder(t *testing.T) {
	c := goClient(t)
	rc := srv.Client(t)
	ctx := context.Background()
	for _, name := range names(t, java) {
		queue := channel(java, "redisson_lock_queue", name)
		queued := func(n int) []string {
			t.Helper()
			deadline := time.Now().Add(answerTimeout)
			for {
				q, _ := redistest.Do(t, rc, "LRANGE", queue, "0", "-1").AsStrSlice()
				if len(q) == n {
					return q
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: queue %q, want %d waiters", name, q, n)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		holder, first, last := tid(), tid(), tid()
		java.lock(t, "fair", name, holder, 0)
		firstWait := java.send(t, "lock", "fair", name, first, "-1")
		queued(1)
		g := fairlock.New(c, name, fairlock.WithRedissonQueue(0))
		got := make(chan error, 1)
		go func() { got <- g.Lock(ctx) }()
		queued(2)
		lastWait := java.send(t, "lock", "fair", name, last, "-1")
		q := queued(3)
		if want := []string{java.owner(first), g.Owner(), java.owner(last)}; !slices.Equal(q, want) {
			t.Fatalf("%s: queue %q, want %q", name, q, want)
		}

		java.unlock(t, "fair", name, holder)
		if a := java.await(t, firstWait, wakeWithin, "first Java waiter"); !a.ok {
			t.Fatalf("%s: %s", name, a.result)
		}
		select {
		case err := <-got:
			t.Fatalf("%s: the Go waiter was granted before its turn (%v)", name, err)
		default:
		}
		java.unlock(t, "fair", name, first)
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(wakeWithin):
			t.Fatalf("%s: the Go waiter was not woken within %v of its turn", name, wakeWithin)
		}
		select {
		case a := <-lastWait:
			t.Fatalf("%s: the last Java waiter was granted before its turn (%v)", name, a)
		default:
		}
		if err := g.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if a := java.await(t, lastWait, wakeWithin, "last Java waiter"); !a.ok {
			t.Fatalf("%s: %s", name, a.result)
		}
		java.unlock(t, "fair", name, last)
		assertGone(t, name)
	}
}

//go:build interop

package interop

import (
	"context"
	"testing"

	"github.com/redisync/redisync/fairlock"
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

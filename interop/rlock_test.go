//go:build interop

package interop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

// TestRLockExcludesBothWays: a foreign hold makes rlock busy, an rlock hold
// makes the foreign lock busy, and each side is granted once the other
// released.
func TestRLockExcludesBothWays(t *testing.T) {
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			c := goClient(t)
			for _, name := range names(t, p) {
				ctx := context.Background()
				mu := rlock.New(c, name)
				them := tid()
				p.lock(t, "lock", name, them, 0)
				if ok, err := mu.TryLock(ctx); err != nil || ok {
					t.Fatalf("%s: rlock TryLock while %s holds = %v, %v; want busy", name, p.name, ok, err)
				}
				if a := p.unlock(t, "lock", name, them); !a.ok {
					t.Fatalf("%s: %s unlock: %s", name, p.name, a.result)
				}
				if ok, err := mu.TryLock(ctx); err != nil || !ok {
					t.Fatalf("%s: rlock TryLock after %s released = %v, %v", name, p.name, ok, err)
				}
				if p.try(t, "lock", name, tid()) {
					t.Fatalf("%s: %s tryLock granted while rlock holds", name, p.name)
				}
				if !p.locked(t, "lock", name) {
					t.Fatalf("%s: %s isLocked false while rlock holds", name, p.name)
				}
				if err := mu.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				them = tid()
				if !p.try(t, "lock", name, them) {
					t.Fatalf("%s: %s tryLock refused after rlock released", name, p.name)
				}
				p.unlock(t, "lock", name, them)
				assertGone(t, name)
			}
		})
	}
}

// TestRLockWakesAcrossLibraries: a release by one library wakes the other's
// waiter through Redisson's channel, promptly (the Go waiter's poll would
// take maxPoll; the foreign hold is a 30 s watchdog lease).
func TestRLockWakesAcrossLibraries(t *testing.T) {
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			c := goClient(t)
			for _, name := range names(t, p) {
				ctx := context.Background()
				ch := channel(p, "redisson_lock__channel", name)

				// The foreign client waits, Go releases. (This direction first:
				// no redisync subscription lingers on the channel yet, so the
				// subscriber seen is the foreign waiter.)
				mu := rlock.New(c, name)
				if err := mu.Lock(ctx); err != nil {
					t.Fatal(err)
				}
				them := tid()
				wait := p.send(t, "lock", "lock", name, them, "-1")
				awaitSubscribers(t, ch, 1)
				if err := mu.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				if a := p.await(t, wait, wakeWithin, "lock "+name); !a.ok {
					t.Fatalf("%s: %s lock: %s", name, p.name, a.result)
				}
				p.unlock(t, "lock", name, them)

				// Go waits, the foreign client releases.
				them = tid()
				p.lock(t, "lock", name, them, 0)
				got := make(chan error, 1)
				go func() { got <- mu.Lock(ctx) }()
				awaitSubscribers(t, ch, 1)
				released := time.Now()
				p.unlock(t, "lock", name, them)
				select {
				case err := <-got:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(wakeWithin):
					t.Fatalf("%s: rlock waiter not woken within %v of %s's release (listening on %s)", name, wakeWithin, p.name, ch)
				}
				t.Logf("%s: %s release -> rlock grant %v", name, p.name, time.Since(released))
				if err := mu.Unlock(ctx); err != nil {
					t.Fatal(err)
				}

				assertGone(t, name)
			}
		})
	}
}

// TestRLockSharedOwner: an rlock handle with a foreign client's owner id is
// that owner: its holds and the foreign client's nest into one count, and
// whichever side releases the last one frees the lock.
func TestRLockSharedOwner(t *testing.T) {
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			c := goClient(t)
			ctx := context.Background()
			name := names(t, p)[0]
			them := tid()
			mu := rlock.New(c, name, rlock.WithOwner(p.owner(them)))
			if err := mu.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if !p.try(t, "lock", name, them) {
				t.Fatalf("%s refused its own owner's re-entry", p.name)
			}
			if n, err := mu.HoldCount(ctx); err != nil || n != 2 {
				t.Fatalf("rlock HoldCount of the shared owner = %d, %v; want 2", n, err)
			}
			if p == java && java.mustOK(t, "held", "lock", name, them) != "true" {
				t.Fatal("Redisson isHeldByThread false for its owner's hold taken by rlock")
			}
			if a := p.unlock(t, "lock", name, them); !a.ok {
				t.Fatalf("%s unlock: %s", p.name, a.result)
			}
			if p.try(t, "lock", name, tid()) {
				t.Fatal("another owner got in while rlock still holds as the shared owner")
			}
			if err := mu.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if p.locked(t, "lock", name) {
				t.Fatal("lock still held after both holds of the shared owner were released")
			}
			if locked, err := mu.IsLocked(ctx); err != nil || locked {
				t.Fatalf("rlock IsLocked after the release = %v, %v", locked, err)
			}
			assertGone(t, name)
		})
	}
}

// TestRLockForeignUnlockBetweenReentries: a shared owner's holds taken by
// both libraries, with the foreign unlock between two redisync re-entries
// (issue 16 item 3, issue 12 defect 5): each unlock releases one hold, and
// the last one frees the lock.
func TestRLockForeignUnlockBetweenReentries(t *testing.T) {
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			c := goClient(t)
			ctx := context.Background()
			name := names(t, p)[0]
			them := tid()
			mu := rlock.New(c, name, rlock.WithOwner(p.owner(them)))
			if err := mu.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			p.lock(t, "lock", name, them, 0)
			if err := mu.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if a := p.unlock(t, "lock", name, them); !a.ok {
				t.Fatalf("%s unlock: %s", p.name, a.result)
			}
			if n, err := mu.HoldCount(ctx); err != nil || n != 2 {
				t.Fatalf("HoldCount after the %s unlock = %d, %v; want 2", p.name, n, err)
			}
			for i := range 2 {
				if err := mu.Unlock(ctx); err != nil {
					t.Fatalf("rlock Unlock %d: %v", i+1, err)
				}
			}
			if p.locked(t, "lock", name) {
				t.Fatalf("lock still held after three locks and three unlocks: %s", describe(t, name))
			}
			assertGone(t, name)
		})
	}
}

// TestRLockReenterForeignHoldGetsToken: rlock re-entering a hold that the
// foreign client created (it keeps no token) gets a real fencing token,
// greater than the tokens issued before, and the hold still frees cleanly.
func TestRLockReenterForeignHoldGetsToken(t *testing.T) {
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			c := goClient(t)
			ctx := context.Background()
			name := names(t, p)[0]
			first := rlock.New(c, name)
			if err := first.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			before := first.Token()
			if err := first.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			them := tid()
			p.lock(t, "lock", name, them, 0)
			mu := rlock.New(c, name, rlock.WithOwner(p.owner(them)))
			if err := mu.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if tok := mu.Token(); tok <= before {
				t.Errorf("token of a re-entered %s hold = %d; want > %d (the last token issued)", p.name, tok, before)
			}
			if err := mu.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			p.unlock(t, "lock", name, them)
			if p.locked(t, "lock", name) {
				t.Fatal("lock still held after both holds were released")
			}
			assertGone(t, name)
		})
	}
}

// TestRLockForceUnlockEitherSide: each side's forceUnlock frees the other's
// hold, and the former holder's unlock then fails.
func TestRLockForceUnlockEitherSide(t *testing.T) {
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			c := goClient(t)
			ctx := context.Background()
			name := names(t, p)[0]
			them := tid()
			p.lock(t, "lock", name, them, 0)
			if locked, err := rlock.New(c, name).IsLocked(ctx); err != nil || !locked {
				t.Fatalf("rlock IsLocked while %s holds = %v, %v", p.name, locked, err)
			}
			if ok, err := rlock.New(c, name).ForceUnlock(ctx); err != nil || !ok {
				t.Fatalf("rlock.ForceUnlock of a %s hold = %v, %v", p.name, ok, err)
			}
			if a := p.unlock(t, "lock", name, them); a.ok {
				t.Fatalf("%s unlock after a force unlock succeeded", p.name)
			}
			mu := rlock.New(c, name, rlock.WithLease(time.Minute))
			if err := mu.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if p.mustOK(t, "force", "lock", name) != "true" {
				t.Fatalf("%s forceUnlock of an rlock hold reported nothing deleted", p.name)
			}
			if err := mu.Unlock(ctx); !errors.Is(err, redisync.ErrLockLost) && !errors.Is(err, redisync.ErrNotHeld) {
				t.Fatalf("rlock Unlock after a force unlock = %v; want ErrLockLost or ErrNotHeld", err)
			}
			assertGone(t, name)
		})
	}
}

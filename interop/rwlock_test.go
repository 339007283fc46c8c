//go:build interop

package interop

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/rwlock"
)

// The read-write lock against Redisson's RReadWriteLock (node-redisson has
// none).

// TestRWReadSharedWriteExcludes: readers of both libraries share the lock,
// a writer of either excludes the other's readers and writers, and
// Redisson's isLockedAsync (the hash's existence, on either side) answers
// right when only redisync holds. Its blocking isLocked() answers per side:
// TestRWRedissonIsLockedAnswersPerSide.
func TestRWReadSharedWriteExcludes(t *testing.T) {
	c := goClient(t)
	ctx := context.Background()
	for _, name := range names(t, java) {
		rw := rwlock.New(c, name)
		reader := tid()
		java.lock(t, "read", name, reader, 0)
		if ok, err := rw.TryRLock(ctx); err != nil || !ok {
			t.Fatalf("%s: TryRLock beside a Redisson reader = %v, %v", name, ok, err)
		}
		if ok, err := rwlock.New(c, name).TryLock(ctx); err != nil || ok {
			t.Fatalf("%s: TryLock while readers hold = %v, %v", name, ok, err)
		}
		if java.try(t, "write", name, tid()) {
			t.Fatalf("%s: Redisson write lock granted while readers hold", name)
		}
		java.unlock(t, "read", name, reader)
		if !java.locked(t, "read", name) || !java.locked(t, "write", name) {
			t.Fatalf("%s: Redisson isLocked false with a redisync reader", name)
		}
		if err := rw.RUnlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rw.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if java.try(t, "read", name, tid()) || java.try(t, "write", name, tid()) {
			t.Fatalf("%s: Redisson granted a hold while redisync writes", name)
		}
		if !java.locked(t, "read", name) || !java.locked(t, "write", name) {
			t.Fatalf("%s: Redisson isLocked false with a redisync writer", name)
		}
		if err := rw.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if java.locked(t, "read", name) || java.locked(t, "write", name) {
			t.Fatalf("%s: Redisson isLocked true after redisync released", name)
		}
		writer := tid()
		java.lock(t, "write", name, writer, 0)
		if ok, err := rw.TryRLock(ctx); err != nil || ok {
			t.Fatalf("%s: TryRLock while Redisson writes = %v, %v", name, ok, err)
		}
		java.unlock(t, "write", name, writer)
		assertGone(t, name)
	}
}

// TestRWRedissonIsLockedAnswersPerSide: Redisson's blocking isLocked() of
// the read lock and of the write lock each answer about their own side, by
// the hash's fields (RedissonReadLock: mode "read", or mode "write" with more
// than two fields; RedissonWriteLock: mode "write"). Issue 16 item 1: with
// redisync's token in the hash, a redisync writer alone made Redisson's read
// lock say it was locked.
func TestRWRedissonIsLockedAnswersPerSide(t *testing.T) {
	c := goClient(t)
	ctx := context.Background()
	sides := func(name string) (read, write bool) {
		t.Helper()
		return java.mustOK(t, "lockedsync", "read", name) == "true", java.mustOK(t, "lockedsync", "write", name) == "true"
	}
	for _, name := range names(t, java) {
		rw := rwlock.New(c, name)
		if err := rw.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if r, w := sides(name); r || !w {
			t.Errorf("%s: Redisson isLocked with a redisync writer: read %v, write %v; want false, true (%s)", name, r, w, describe(t, name))
		}
		if err := rw.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rw.RLock(ctx); err != nil {
			t.Fatal(err)
		}
		if r, w := sides(name); !r || w {
			t.Errorf("%s: Redisson isLocked with a redisync reader: read %v, write %v; want true, false (%s)", name, r, w, describe(t, name))
		}
		if err := rw.RUnlock(ctx); err != nil {
			t.Fatal(err)
		}
		if r, w := sides(name); r || w {
			t.Errorf("%s: Redisson isLocked after redisync released: read %v, write %v", name, r, w)
		}
		assertGone(t, name)
	}
}

// TestRWRedissonReadUnlockKeepsGoReader: a Redisson reader's release must
// see redisync's live read hold (its timeout keys are where Redisson looks),
// so the lock stays read-locked and writers stay out.
func TestRWRedissonReadUnlockKeepsGoReader(t *testing.T) {
	c := goClient(t)
	ctx := context.Background()
	for _, name := range names(t, java) {
		rw := rwlock.New(c, name)
		reader := tid()
		java.lock(t, "read", name, reader, 0)
		if err := rw.RLock(ctx); err != nil {
			t.Fatal(err)
		}
		java.unlock(t, "read", name, reader)
		if java.try(t, "write", name, tid()) {
			t.Fatalf("%s: Redisson write lock granted while a redisync reader holds", name)
		}
		if err := rw.RUnlock(ctx); err != nil {
			t.Fatal(err)
		}
		writer := tid()
		if !java.try(t, "write", name, writer) {
			t.Fatalf("%s: Redisson write lock refused after every reader left", name)
		}
		java.unlock(t, "write", name, writer)
		assertGone(t, name)
	}
}

// TestRWSharedOwnerWriteReleasedByRedisson: a redisync write hold under a
// Redisson owner id, released by Redisson's write unlock, frees the lock
// (the hash must hold nothing Redisson's release does not count).
func TestRWSharedOwnerWriteReleasedByRedisson(t *testing.T) {
	c := goClient(t)
	ctx := context.Background()
	name := names(t, java)[0]
	owner := tid()
	rw := rwlock.New(c, name, rwlock.WithOwner(java.owner(owner)), rwlock.WithLease(time.Minute))
	if err := rw.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if a := java.unlock(t, "write", name, owner); !a.ok {
		t.Fatalf("Redisson write unlock of its owner's hold: %s", a.result)
	}
	other := tid()
	if !java.try(t, "write", name, other) {
		t.Fatal("writers locked out after the shared owner's last write hold was released")
	}
	java.unlock(t, "write", name, other)
	_ = rw.Unlock(ctx) // the hold is gone: ErrNotHeld or ErrLockLost
	assertGone(t, name)
}

// TestRWReenterRedissonWriteGetsToken: a redisync write re-entering a
// Redisson write hold (same owner) gets a real fencing token.
func TestRWReenterRedissonWriteGetsToken(t *testing.T) {
	c := goClient(t)
	ctx := context.Background()
	name := names(t, java)[0]
	first := rwlock.New(c, name)
	if err := first.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	before := first.WriteLocker().Token()
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	owner := tid()
	java.lock(t, "write", name, owner, 0)
	rw := rwlock.New(c, name, rwlock.WithOwner(java.owner(owner)))
	if err := rw.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if tok := rw.WriteLocker().Token(); tok <= before {
		t.Errorf("token of a re-entered Redisson write hold = %d; want > %d", tok, before)
	}
	if err := rw.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	java.unlock(t, "write", name, owner)
	if java.locked(t, "write", name) {
		t.Fatal("write lock still held after both holds were released")
	}
	assertGone(t, name)
}

// TestRWWakesAcrossLibraries: write releases wake the other library's
// waiting reader through "redisson_rwlock:{name}".
func TestRWWakesAcrossLibraries(t *testing.T) {
	c := goClient(t)
	ctx := context.Background()
	for _, name := range names(t, java) {
		ch := channel(java, "redisson_rwlock", name)
		rw := rwlock.New(c, name)

		// Redisson reads after redisync's write release. (This direction
		// first: no redisync subscription lingers on the channel yet, so the
		// subscriber seen is Redisson's waiter.)
		if err := rw.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		reader := tid()
		wait := java.send(t, "lock", "read", name, reader, "-1")
		awaitSubscribers(t, ch, 1)
		if err := rw.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if a := java.await(t, wait, wakeWithin, "read lock "+name+" "+describe(t, name)); !a.ok {
			t.Fatalf("%s: Redisson read lock: %s", name, a.result)
		}
		java.unlock(t, "read", name, reader)

		// Go reads after Redisson's write release.
		writer := tid()
		java.lock(t, "write", name, writer, 0)
		got := make(chan error, 1)
		go func() { got <- rw.RLock(ctx) }()
		awaitSubscribers(t, ch, 1)
		java.unlock(t, "write", name, writer)
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(wakeWithin):
			t.Fatalf("%s: redisync reader not woken within %v of Redisson's write release", name, wakeWithin)
		}
		if err := rw.RUnlock(ctx); err != nil {
			t.Fatal(err)
		}
		assertGone(t, name)
	}
}

// TestRWInspectAndForceUnlockEitherSide: each side's isLocked/holdCount see
// the other's holds under a shared owner, and each side's force unlock frees
// the other's hold.
func TestRWInspectAndForceUnlockEitherSide(t *testing.T) {
	c := goClient(t)
	ctx := context.Background()
	name := names(t, java)[0]
	owner := tid()
	rw := rwlock.New(c, name, rwlock.WithOwner(java.owner(owner)))
	if err := rw.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	java.lock(t, "read", name, owner, 0)
	if n, err := rw.HoldCount(ctx); err != nil || n != 2 {
		t.Fatalf("rwlock HoldCount of the shared reader = %d, %v; want 2", n, err)
	}
	if java.mustOK(t, "held", "read", name, owner) != "true" {
		t.Fatal("Redisson isHeldByThread false for its owner's read hold taken by rwlock")
	}
	if ok, err := rwlock.New(c, name).ForceUnlock(ctx); err != nil || !ok {
		t.Fatalf("rwlock.ForceUnlock = %v, %v", ok, err)
	}
	if a := java.unlock(t, "read", name, owner); a.ok {
		t.Fatal("Redisson read unlock after a force unlock succeeded")
	}
	_ = rw.RUnlock(ctx) // gone: ErrLockLost or ErrNotHeld

	w := rwlock.New(c, name, rwlock.WithLease(time.Minute))
	if err := w.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if locked, err := w.IsLocked(ctx); err != nil || !locked {
		t.Fatalf("rwlock IsLocked = %v, %v", locked, err)
	}
	if java.mustOK(t, "force", "write", name) != "true" {
		t.Fatal("Redisson write forceUnlock of a redisync write hold deleted nothing")
	}
	if locked, err := w.IsLocked(ctx); err != nil || locked {
		t.Fatalf("rwlock IsLocked after Redisson's force unlock = %v, %v", locked, err)
	}
	_ = w.Unlock(ctx)
	assertGone(t, name)
}

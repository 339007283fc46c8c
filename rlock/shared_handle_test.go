package rlock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
)

// Issue 12, defect 11: one handle shared by goroutines, the sync.Mutex habit.
// The counter is a read-pause-write, so any overlap of two critical sections
// loses an update (on ae978fd: 209 of 300).
func TestGoroutinesSharingOneHandleExcludeEachOther(t *testing.T) {
	e := setup(t)
	m := New(e.C, "shared:counter")
	const goroutines, each = 3, 100
	var (
		counter atomic.Int64 // atomic only so that -race reports overlaps as a wrong count, not a data race
		wg      sync.WaitGroup
	)
	for range goroutines {
		wg.Go(func() {
			for range each {
				if err := m.Lock(bg()); err != nil {
					t.Error(err)
					return
				}
				v := counter.Load()
				time.Sleep(200 * time.Microsecond)
				counter.Store(v + 1)
				if err := m.Unlock(bg()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(goroutines*each), counter.Load(), "critical sections overlapped")
	assert.False(t, e.Exists(t, "shared:counter"))
	assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld)
}

func TestNestedLockOnADefaultHandleWaitsLikeSyncMutex(t *testing.T) {
	e := setup(t)
	const name = "shared:nested"
	m := New(e.C, name)
	require.NoError(t, m.Lock(bg()))
	tok := m.Token()

	// TryLock answers without a round trip: the handle is held here.
	calls := func() int64 {
		return redistest.ScriptCalls(t, e.RC)
	}
	before := calls()
	ok, err := m.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, before, calls(), "TryLock on a held handle sent a script")

	// A nested Lock waits until its ctx ends and returns ctx.Err() unwrapped.
	const wait = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(bg(), wait)
	defer cancel()
	start := time.Now()
	assert.Equal(t, context.DeadlineExceeded, m.Lock(ctx))
	assert.GreaterOrEqual(t, time.Since(start), wait-10*time.Millisecond, "the nested Lock did not wait")

	// The hold is as it was: one count, same token.
	n, err := m.HoldCount(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, tok, m.Token())
	require.NoError(t, m.Unlock(bg()))
	assert.False(t, e.Exists(t, name))
	assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrNotHeld)
}

func TestLockFromAnotherGoroutineGetsAFreshHoldAfterUnlock(t *testing.T) {
	e := setup(t)
	const name = "shared:handoff"
	m := New(e.C, name)
	require.NoError(t, m.Lock(bg()))
	first := m.Token()
	got := make(chan error, 1)
	go func() { got <- m.Lock(bg()) }()
	select {
	case err := <-got:
		t.Fatalf("second goroutine got in while the handle was held (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, m.Unlock(bg()))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("second goroutine never got the lock")
	}
	assert.Greater(t, m.Token(), first, "a new hold, not a nested one")
	n, err := m.HoldCount(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	// Unlock from a goroutine other than the locker's is fine, as with sync.Mutex.
	unlocked := make(chan error, 1)
	go func() { unlocked <- m.Unlock(bg()) }()
	require.NoError(t, <-unlocked)
	assert.False(t, e.Exists(t, name))
}

func TestFailedLockOpensTheGate(t *testing.T) {
	e := setup(t)
	const name = "shared:failed"
	other := New(e.C, name)
	require.NoError(t, other.Lock(bg()))
	m := New(e.C, name)
	ctx, cancel := context.WithTimeout(bg(), 100*time.Millisecond)
	defer cancel()
	assert.Equal(t, context.DeadlineExceeded, m.Lock(ctx))
	ok, err := m.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, other.Unlock(bg()))
	lctx, lcancel := context.WithTimeout(bg(), 10*time.Second)
	defer lcancel()
	require.NoError(t, m.Lock(lctx), "a failed Lock or TryLock left the gate shut")
	require.NoError(t, m.Unlock(bg()))
	e.WaitEmpty(t)
}

func TestLostHoldKeepsTheHandleUntilItsUnlock(t *testing.T) {
	e := setup(t)
	const name = "shared:lost"
	m := New(e.C, name, WithLease(100*time.Millisecond))
	require.NoError(t, m.Lock(bg()))
	select {
	case <-m.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the fixed lease did not end the hold")
	}
	assert.ErrorIs(t, m.Err(), redisync.ErrLockLost)
	// The key is gone, but the holder has not unlocked: another goroutine
	// sharing the handle still waits (it would otherwise run while the
	// holder, not yet told, may still be in its critical section).
	ctx, cancel := context.WithTimeout(bg(), 200*time.Millisecond)
	defer cancel()
	assert.Equal(t, context.DeadlineExceeded, m.Lock(ctx))
	require.ErrorIs(t, m.Unlock(bg()), redisync.ErrLockLost)
	lctx, lcancel := context.WithTimeout(bg(), 10*time.Second)
	defer lcancel()
	require.NoError(t, m.Lock(lctx))
	require.NoError(t, m.Unlock(bg()))
	e.WaitEmpty(t)
}

func TestWithReentrantNestsOneHold(t *testing.T) {
	e := setup(t)
	const name = "shared:reentrant"
	m := New(e.C, name, WithReentrant())
	require.NoError(t, m.Lock(bg()))
	tok := m.Token()
	ctx, cancel := context.WithTimeout(bg(), 5*time.Second)
	defer cancel()
	require.NoError(t, m.Lock(ctx), "a reentrant handle nests at once")
	n, err := m.HoldCount(bg())
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, tok, m.Token(), "one hold, one token")
	require.NoError(t, m.Unlock(bg()))
	assert.NoError(t, m.Err())
	require.NoError(t, m.Unlock(bg()))
	assert.False(t, e.Exists(t, name))
}

func TestWithNonReentrantRefusesASecondLockAtOnce(t *testing.T) {
	e := setup(t)
	m := New(e.C, "shared:nonreentrant", WithNonReentrant())
	require.NoError(t, m.Lock(bg()))
	start := time.Now()
	assert.ErrorIs(t, m.Lock(bg()), redisync.ErrNonReentrant)
	_, err := m.TryLock(bg())
	assert.ErrorIs(t, err, redisync.ErrNonReentrant)
	// Another goroutine is refused the same way: the handle is held.
	refused := make(chan error, 1)
	go func() { refused <- m.Lock(bg()) }()
	assert.ErrorIs(t, <-refused, redisync.ErrNonReentrant)
	assert.Less(t, time.Since(start), 5*time.Second, "refusals must not wait")
	require.NoError(t, m.Unlock(bg()))
	require.NoError(t, m.Lock(bg()), "free again after Unlock")
	require.NoError(t, m.Unlock(bg()))
	e.WaitEmpty(t)
}

func TestReentrantAndNonReentrantTogetherPanic(t *testing.T) {
	e := setup(t)
	assert.PanicsWithValue(t, "rlock: WithReentrant and WithNonReentrant contradict each other", func() {
		New(e.C, "x", WithReentrant(), WithNonReentrant())
	})
}

// On a Client with holder info and on one without (whose acquire then
// sends no holder-info key: a shared owner's latch takes the rare path
// all the same).
func TestHandlesWithOneOwnerIdShareItsHold(t *testing.T) {
	for _, info := range []bool{true, false} {
		e := setup(t, redisync.WithHolderInfo(info))
		const name = "shared:owner"
		a, b := New(e.C, name, WithOwner("svc:1")), New(e.C, name, WithOwner("svc:1"))
		require.NoError(t, a.Lock(bg()), "holder info %v: a free name", info)
		ctx, cancel := context.WithTimeout(bg(), 5*time.Second)
		require.NoError(t, b.Lock(ctx), "WithOwner implies re-entry: the owner's second Lock nests")
		require.NoError(t, a.Lock(ctx), "and so does the same handle's")
		cancel()
		assert.Equal(t, int64(3), e.Int(t, "HGET", name, "svc:1"))
		for _, h := range []*Mutex{b, a, a} {
			require.NoError(t, h.Unlock(bg()))
		}
		locktest.Eventually(t, 5*time.Second, func() bool { return !e.Exists(t, name) }, "the owner's holds all released")
	}
}

func TestClosingTheClientEndsAWaitForTheHandle(t *testing.T) {
	e := setup(t)
	c := e.Client(t)
	m := New(c, "shared:closed")
	require.NoError(t, m.Lock(bg()))
	got := make(chan error, 1)
	go func() { got <- m.Lock(bg()) }()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, c.Close())
	select {
	case err := <-got:
		assert.ErrorIs(t, err, redisync.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("a Lock waiting for its own handle outlived the Client")
	}
}

// A reentrant handle locked again past a lost hold, before that hold's
// Unlock, nests as it would past a live one: the inner Unlock releases the
// new hold, and the outer one cleans up what is left of the lost hold in
// Redis (of a shared owner, only this handle's part) and reports the loss.
func TestLockPastALostHoldLeavesItsUnlockToReportTheLoss(t *testing.T) {
	e := setup(t)
	lostAt := func(m *Mutex) {
		t.Helper()
		require.NoError(t, m.Lock(bg()))
		select {
		case <-m.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the fixed lease did not end the hold")
		}
		require.ErrorIs(t, m.Err(), redisync.ErrLockLost)
	}
	t.Run("key gone", func(t *testing.T) {
		const name = "shared:lost-relock"
		m := New(e.C, name, WithReentrant(), WithLease(100*time.Millisecond))
		lostAt(m)
		eventually(t, 5*time.Second, func() bool { return !e.Exists(t, name) }, "the key expired")
		require.NoError(t, m.Lock(bg()), "a fresh hold")
		require.NoError(t, m.Unlock(bg()), "the inner Unlock releases it")
		assert.False(t, e.Exists(t, name))
		assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrLockLost, "the outer Unlock reports the loss")
		assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrNotHeld)
	})
	t.Run("shared owner, key kept", func(t *testing.T) {
		const name, owner = "shared:lost-relock-owner", "svc:lost"
		keeper := New(e.C, name, WithOwner(owner)) // renewed: the hash lives on
		require.NoError(t, keeper.Lock(bg()))
		m := New(e.C, name, WithOwner(owner), WithLease(200*time.Millisecond))
		lostAt(m) // lost by its own lease, its count still in the hash
		count := func() int64 { return e.Int(t, "HGET", name, owner) }
		require.Equal(t, int64(2), count())
		require.NoError(t, m.Lock(bg()), "re-enters the owner's hold")
		require.Equal(t, int64(3), count())
		require.NoError(t, m.Unlock(bg()))
		assert.Equal(t, int64(2), count(), "the inner Unlock releases the new hold")
		assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrLockLost, "the outer Unlock reports the loss")
		assert.Equal(t, int64(1), count(), "and takes the lost hold's count, not the keeper's")
		assert.Equal(t, int64(3), e.Int(t, "HLEN", name), "the owner's count, the token and the keeper's latch: %s", e.Describe(t))
		assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrNotHeld)
		assert.NoError(t, keeper.Err())
		require.NoError(t, keeper.Unlock(bg()))
		assert.False(t, e.Exists(t, name), "nothing left: %s", e.Describe(t))
	})
}

// Goroutines sharing one reentrant handle (WithReentrant, or WithOwner)
// loop Lock then Unlock. One's last Unlock must end the hold before
// another's grant can join it: a grant that joined the ending hold was
// forgotten locally (its Unlock got ErrNotHeld or ErrLockLost) while its
// count stayed in Redis, unrenewed, shutting every other owner out for the
// lease.
func TestGoroutinesSharingAReentrantHandleLeaveTheLockFree(t *testing.T) {
	for what, opt := range map[string]Option{"WithReentrant": WithReentrant(), "WithOwner": WithOwner("job-7")} {
		t.Run(what, func(t *testing.T) {
			e := setup(t)
			const name = "shared:reentrant"
			locktest.ShareReentrantHandle(t, New(e.C, name, opt), 8, 1500*time.Millisecond)
			assert.False(t, e.Exists(t, name), "lock left held after every Unlock: %s", e.Describe(t))
		})
	}
}

package multilock

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

func TestOppositeOrdersNeverDeadlock(t *testing.T) {
	const run = 5 * time.Second
	t.Run("one script", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		build := func(names ...string) *Mutex {
			var ls []redisync.Locker
			for _, n := range names {
				ls = append(ls, rlock.New(e.C, n))
			}
			return New(ls...)
		}
		a, b := build("A", "B", "C"), build("C", "B", "A")
		require.True(t, a.Atomic())
		contend(t, run, a, b)
		e.WaitEmpty(t)
	})
	t.Run("one by one", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		other := e.Client(t)
		// A fair lock among the components forces one TryLock per component.
		build := func(c1, c2 *redisync.Client, order ...string) *Mutex {
			byName := map[string]redisync.Locker{
				"A": rlock.New(c1, "A"), "B": fairlock.New(c2, "B"), "C": rlock.New(c1, "C"),
			}
			var ls []redisync.Locker
			for _, n := range order {
				ls = append(ls, byName[n])
			}
			return New(ls...)
		}
		a, b := build(e.C, other, "A", "B", "C"), build(other, e.C, "C", "B", "A")
		require.False(t, a.Atomic())
		contend(t, run, a, b)
		e.WaitEmpty(t)
	})
}

// contend runs two multilocks over the same locks against each other for d
// and checks that both make progress and never hold together.
func contend(t *testing.T, d time.Duration, locks ...*Mutex) {
	t.Helper()
	var inside atomic.Int32
	counts := make([]atomic.Int64, len(locks))
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for i, m := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				ctx, cancel := context.WithTimeout(bg(), 5*time.Second)
				err := m.Lock(ctx)
				cancel()
				if err != nil {
					t.Errorf("multilock %d: %v (deadlock?)", i, err)
					return
				}
				if inside.Add(1) != 1 {
					t.Error("two multilocks over the same locks held together")
				}
				counts[i].Add(1)
				inside.Add(-1)
				if err := m.Unlock(bg()); err != nil {
					t.Error(err)
					return
				}
				// Work outside the lock, as a program does. A multilock
				// waiting for a busy component polls (with backoff up to
				// MaxBackoff, see the package doc), so against a contender
				// that locks again at once it only finds the round-trip gap
				// between that one's Unlock and its next Lock: beside a
				// second make test one contender held 1221 times in 5 s and
				// the other never (its Lock ran out of its 5 s). A pause of
				// up to 5 ms leaves the locks free for a large part of each
				// cycle (one took about 4 ms), so the poller's dozens of
				// rounds in 5 s do not all miss by chance.
				time.Sleep(rand.N(5 * time.Millisecond))
			}
		}()
	}
	wg.Wait()
	for i := range counts {
		t.Logf("multilock %d held %d times", i, counts[i].Load())
		assert.Positive(t, counts[i].Load(), "multilock %d starved", i)
	}
}

func TestFailureOnTheLastComponentReleasesTheOthers(t *testing.T) {
	e := setup(t)
	second := redistest.Start(t)
	c2 := redisync.New(second.Client(t))
	t.Cleanup(func() { c2.Close() })
	on2 := &locktest.Env{Srv: second, RC: second.Client(t), C: c2}

	busy := rlock.New(c2, "last")
	require.NoError(t, busy.Lock(bg()))
	m := New(rlock.New(e.C, "first"), rlock.New(e.C, "middle"), rlock.New(c2, "last"))
	require.False(t, m.Atomic())
	ok, err := m.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok)
	assert.False(t, e.Exists(t, "first"), "first component left held")
	assert.False(t, e.Exists(t, "middle"), "middle component left held")

	ctx, cancel := context.WithTimeout(bg(), 200*time.Millisecond)
	defer cancel()
	assert.Equal(t, context.DeadlineExceeded, m.Lock(ctx))
	assert.Zero(t, e.DBSize(t), "partial holds outlived the call: %v", e.Keys(t))
	assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrNotHeld)
	require.NoError(t, busy.Unlock(bg()))

	// An error (not busy) on the last component also gives the others back.
	on2.Do(t, "SET", "last", "not a lock")
	ok, err = m.TryLock(bg())
	assert.False(t, ok)
	require.Error(t, err)
	assert.Zero(t, e.DBSize(t), "partial holds outlived the error: %v", e.Keys(t))
	on2.Do(t, "DEL", "last")

	// Now free: all three held, on two servers.
	require.NoError(t, m.Lock(bg()))
	assert.True(t, e.Exists(t, "first") && e.Exists(t, "middle") && on2.Exists(t, "last"))
	require.NoError(t, m.Unlock(bg()))
	assert.Zero(t, e.DBSize(t)+on2.DBSize(t))
}

func TestOneScriptRoundIsAllOrNothing(t *testing.T) {
	e := setup(t)
	holder := rlock.New(e.C, "{acct}:3")
	require.NoError(t, holder.Lock(bg()))
	m := New(rlock.New(e.C, "{acct}:1"), rlock.New(e.C, "{acct}:2"), rlock.New(e.C, "{acct}:3"))
	require.True(t, m.Atomic())
	ok, err := m.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok)
	assert.False(t, e.Exists(t, "{acct}:1"))
	assert.False(t, e.Exists(t, "{acct}:2"))
	require.NoError(t, holder.Unlock(bg()))
}

func TestSameSlotRlocksTakeOneRoundTrip(t *testing.T) {
	e := setup(t)
	re := rlock.WithReentrant()
	m := NewReentrant(rlock.New(e.C, "{acct}:1", re), rlock.New(e.C, "{acct}:2", re), rlock.New(e.C, "{acct}:3", re))
	require.True(t, m.Atomic())
	calls := func() int64 {
		return redistest.ScriptCalls(t, e.RC)
	}
	// Warm up: the first call loads the script (EVALSHA, NOSCRIPT, EVAL).
	require.NoError(t, m.Lock(bg()))
	require.NoError(t, m.Unlock(bg()))
	before := calls()
	ok, err := m.TryLock(bg())
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(1), calls()-before, "one script for three locks")
	toks := []uint64{}
	for _, c := range m.Components() {
		require.NoError(t, c.Err())
		toks = append(toks, c.Token())
	}
	assert.Equal(t, toks[0], m.Token(), "Token is the first component's")
	assert.NotZero(t, toks[0])
	// Re-entering nests every component, still in one script.
	before = calls()
	require.NoError(t, m.Lock(bg()))
	assert.Equal(t, int64(1), calls()-before)
	n, err := e.Do(t, "HGET", "{acct}:2", m.Components()[1].(*rlock.Mutex).Owner()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	require.NoError(t, m.Unlock(bg()))
	require.NoError(t, m.Err(), "one hold left")
	require.NoError(t, m.Unlock(bg()))
	assert.Zero(t, e.DBSize(t))
	assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld)
}

func TestLosingAComponentEndsTheHold(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(300*time.Millisecond))
	second := redistest.Start(t)
	c2 := redisync.New(second.Client(t), redisync.WithWatchdogTimeout(300*time.Millisecond))
	t.Cleanup(func() { c2.Close() })
	m := New(rlock.New(e.C, "x"), rlock.New(c2, "y"))
	err := redisync.Do(bg(), m, func(ctx context.Context) error {
		redistest.Do(t, second.Client(t), "DEL", "y")
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(3 * time.Second):
			return errors.New("loss not signalled")
		}
	})
	assert.ErrorIs(t, err, redisync.ErrLockLost)
	assert.ErrorIs(t, m.Err(), redisync.ErrLockLost)
	assert.Zero(t, e.DBSize(t), "the component still held was released")
	assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrNotHeld, "Do released it")
}

func TestBadInputPanics(t *testing.T) {
	e := setup(t)
	a := rlock.New(e.C, "a")
	assert.PanicsWithValue(t, "multilock: no components", func() { New() })
	assert.Panics(t, func() { New(a, nil) })
	assert.Panics(t, func() { New(a, (*rlock.Mutex)(nil)) })
	assert.Panics(t, func() { New(a, a) })
	// A component without a Name method is accepted since issue 15
	// (TestAnyLockerIsAComponentNamedOrNot).
	//lint:ignore SA1012 the nil ctx is the point
	assert.Panics(t, func() { _ = New(a).Lock(nil) })
}

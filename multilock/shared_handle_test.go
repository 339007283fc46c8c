package multilock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/rlock"
)

// counterUnder runs goroutines that share l around a read-pause-write
// counter: any overlap of two critical sections loses an update.
func counterUnder(t *testing.T, l redisync.Locker, goroutines, each int) int64 {
	t.Helper()
	var (
		counter atomic.Int64 // atomic only so that -race reports overlaps as a wrong count, not a data race
		wg      sync.WaitGroup
	)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				ctx, cancel := context.WithTimeout(bg(), 30*time.Second)
				err := l.Lock(ctx)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				v := counter.Load()
				time.Sleep(200 * time.Microsecond)
				counter.Store(v + 1)
				if err := l.Unlock(bg()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return counter.Load()
}

// Issue 12, defect 11, for multilock: one multilock shared by goroutines,
// the sync.Mutex habit, whether its rounds are one script (same-slot
// rlocks) or one TryLock per component. On ae978fd the components nested
// and the goroutines were inside together (fails there; the one-script
// case also fails on the commit before this test, whose script took the
// components' holds past their gates).
func TestGoroutinesSharingOneMultilockExcludeEachOther(t *testing.T) {
	e := setup(t)
	const goroutines, each = 3, 40
	for _, tc := range []struct {
		name   string
		atomic bool
		m      *Mutex
	}{
		{"one-script", true, New(rlock.New(e.C, "{c}:1"), rlock.New(e.C, "{c}:2"))},
		{"per-component", false, New(rlock.New(e.C, "{d}:1"), fairlock.New(e.C, "{d}:2"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.atomic, tc.m.Atomic())
			got := counterUnder(t, tc.m, goroutines, each)
			assert.Equal(t, int64(goroutines*each), got, "critical sections overlapped")
			assert.ErrorIs(t, tc.m.Err(), redisync.ErrNotHeld)
			assert.Zero(t, e.DBSize(t), "keys left: %v", e.Keys(t))
		})
	}
}

// A component locked directly, by another goroutine, while a one-script
// multilock holds it waits for the multilock's Unlock: the script passes
// the component's gate like the component's own Lock would.
func TestComponentLockedDirectlyWaitsForTheMultilock(t *testing.T) {
	e := setup(t)
	a, b := rlock.New(e.C, "{g}:a"), rlock.New(e.C, "{g}:b")
	m := New(a, b)
	require.True(t, m.Atomic())
	require.NoError(t, m.Lock(bg()))
	ok, err := a.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok, "the component is held through the multilock")
	ctx, cancel := context.WithTimeout(bg(), 200*time.Millisecond)
	defer cancel()
	assert.Equal(t, context.DeadlineExceeded, a.Lock(ctx))
	n, err := a.HoldCount(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "not re-entered")

	// And the other way round: a component held directly makes the round busy.
	require.NoError(t, m.Unlock(bg()))
	require.NoError(t, b.Lock(bg()))
	ok, err = m.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok, "b is held by its handle")
	assert.False(t, e.Exists(t, "{g}:a"), "the round gave back nothing it took")
	require.NoError(t, b.Unlock(bg()))
	require.NoError(t, m.Lock(bg()))
	require.NoError(t, m.Unlock(bg()))
	assert.Zero(t, e.DBSize(t))
}

// A nested Lock on a default multilock waits like a nested
// sync.Mutex.Lock; NewReentrant over reentrant components nests.
func TestNestedMultilockLockWaitsUnlessReentrant(t *testing.T) {
	e := setup(t)
	m := New(rlock.New(e.C, "{n}:a"), rlock.New(e.C, "{n}:b"))
	require.NoError(t, m.Lock(bg()))
	ctx, cancel := context.WithTimeout(bg(), 200*time.Millisecond)
	defer cancel()
	assert.Equal(t, context.DeadlineExceeded, m.Lock(ctx))
	assert.NoError(t, m.Err())
	require.NoError(t, m.Unlock(bg()))
	assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrNotHeld)

	re := rlock.WithReentrant()
	r := NewReentrant(rlock.New(e.C, "{r}:a", re), rlock.New(e.C, "{r}:b", re))
	require.NoError(t, r.Lock(bg()))
	require.NoError(t, r.Lock(bg()))
	require.NoError(t, r.Unlock(bg()))
	assert.NoError(t, r.Err(), "one hold left")
	assert.True(t, e.Exists(t, "{r}:a"))
	require.NoError(t, r.Unlock(bg()))
	assert.Zero(t, e.DBSize(t))
}

// A multilock is a Locker with a Name, so it can be a component of another:
// the outer one holds every lock of the inner ones, all or none.
func TestMultilockOfMultilocks(t *testing.T) {
	e := setup(t)
	inner1 := New(rlock.New(e.C, "x:1"), rlock.New(e.C, "x:2"))
	inner2 := New(fairlock.New(e.C, "y:1"), rlock.New(e.C, "y:2"))
	outer := New(inner2, inner1)
	assert.Equal(t, "x:1+x:2", inner1.Name())
	assert.Equal(t, []redisync.Locker{inner1, inner2}, outer.Components(), "ordered by name")
	require.NoError(t, outer.Lock(bg()))
	for _, k := range []string{"x:1", "x:2", "y:1", "y:2"} {
		assert.True(t, e.Exists(t, k), "%s held", k)
	}
	assert.Equal(t, inner1.Token(), outer.Token())
	assert.NotZero(t, outer.Token())

	// A lock of an inner multilock held elsewhere makes the outer busy, and
	// the round gives back what it took.
	require.NoError(t, outer.Unlock(bg()))
	blocker := rlock.New(e.C, "y:2")
	require.NoError(t, blocker.Lock(bg()))
	ok, err := outer.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok)
	assert.False(t, e.Exists(t, "x:1"))
	require.NoError(t, blocker.Unlock(bg()))

	// Shared by goroutines, the outer one excludes them too.
	got := counterUnder(t, outer, 3, 15)
	assert.Equal(t, int64(45), got)
	assert.Zero(t, e.DBSize(t), "keys left: %v", e.Keys(t))
}

// A wait at the gate of a multilock whose hold was lost to its Client's
// Close ends with ErrClosed: the holder's Unlock may never come.
func TestLockOnAMultilockLostToClientCloseIsErrClosed(t *testing.T) {
	e := setup(t)
	c := e.Client(t)
	m := New(rlock.New(c, "{z}:a"), fairlock.New(c, "{z}:b"))
	require.NoError(t, m.Lock(bg()))
	require.NoError(t, c.Close())
	ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
	defer cancel()
	assert.ErrorIs(t, m.Lock(ctx), redisync.ErrClosed)
	assert.ErrorIs(t, m.Err(), redisync.ErrLockLost)
}

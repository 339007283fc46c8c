package multilock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

func TestAMultilockOfAMultilockAndAnRlockLocksUnlocksAndSignalsLoss(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(600*time.Millisecond))
	inner := New(rlock.New(e.C, "n:a"), rlock.New(e.C, "n:b"))
	outer := New(inner, rlock.New(e.C, "n:c"))
	assert.Equal(t, "n:a+n:b+n:c", outer.Name(), "the inner multilock is ordered by its name")

	require.NoError(t, outer.Lock(bg()))
	for _, k := range []string{"n:a", "n:b", "n:c"} {
		assert.True(t, e.Exists(t, k), "%s held", k)
		ok, err := rlock.New(e.C, k).TryLock(bg())
		require.NoError(t, err)
		assert.False(t, ok, "%s is busy for others", k)
	}
	assert.NotZero(t, outer.Token())
	assert.NoError(t, outer.Err())
	assert.NoError(t, inner.Err())
	ok, err := inner.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok, "the inner multilock is held through the outer one")
	require.NoError(t, outer.Unlock(bg()))
	assert.ErrorIs(t, outer.Err(), redisync.ErrNotHeld)
	assert.ErrorIs(t, inner.Err(), redisync.ErrNotHeld)
	e.WaitEmpty(t)

	// A lock deep inside is lost: both multilocks say so.
	require.NoError(t, outer.Lock(bg()))
	done := outer.Done()
	e.Do(t, "DEL", "n:b")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the loss of a nested component was not signalled")
	}
	assert.ErrorIs(t, outer.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, inner.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, outer.Unlock(bg()), redisync.ErrLockLost)
	e.WaitEmpty(t)

	// And Do runs under the nested multilock.
	require.NoError(t, redisync.Do(bg(), outer, func(ctx context.Context) error {
		assert.True(t, e.Exists(t, "n:a") && e.Exists(t, "n:b") && e.Exists(t, "n:c"))
		return nil
	}))
	e.WaitEmpty(t)
}

// ownLocker is a Locker of a user's own, without a Name method.
type ownLocker struct{ m *rlock.Mutex }

func (u ownLocker) Lock(ctx context.Context) error            { return u.m.Lock(ctx) }
func (u ownLocker) TryLock(ctx context.Context) (bool, error) { return u.m.TryLock(ctx) }
func (u ownLocker) Unlock(ctx context.Context) error          { return u.m.Unlock(ctx) }
func (u ownLocker) Token() uint64                             { return u.m.Token() }
func (u ownLocker) Done() <-chan struct{}                     { return u.m.Done() }
func (u ownLocker) Err() error                                { return u.m.Err() }

func TestAnyLockerIsAComponentNamedOrNot(t *testing.T) {
	e := setup(t)
	u := ownLocker{rlock.New(e.C, "u:z")}
	named := rlock.New(e.C, "u:y")
	m := New(u, named)
	assert.Equal(t, []redisync.Locker{named, u}, m.Components(), "named components first, then the others in the order given")
	assert.Contains(t, m.Name(), "multilock.ownLocker")
	require.NoError(t, m.Lock(bg()))
	assert.True(t, e.Exists(t, "u:z"))
	assert.True(t, e.Exists(t, "u:y"))
	require.NoError(t, m.Unlock(bg()))
	e.WaitEmpty(t)
}

func TestALockTwiceThroughANestedMultilockIsRefused(t *testing.T) {
	e := setup(t)
	a, b := rlock.New(e.C, "d:a"), rlock.New(e.C, "d:b")
	assert.PanicsWithValue(t, "multilock: components 0 and 1 are or contain the same lock", func() { New(New(a, b), a) })
	assert.Panics(t, func() { New(b, New(New(a, b))) })
	assert.NotPanics(t, func() { New(New(a), b) })
}

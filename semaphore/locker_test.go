package semaphore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
)

func TestDoUnderALockerHoldsItsPermitsAndGivesThemBack(t *testing.T) {
	e := setup(t)
	s := New(e.C, "sem:do", 5)
	l := s.Locker(2)
	assert.ErrorIs(t, l.Err(), redisync.ErrNotHeld)
	assert.Zero(t, l.Token())
	err := redisync.Do(bg(), l, func(ctx context.Context) error {
		n, err := s.Available(ctx)
		require.NoError(t, err)
		assert.Equal(t, 3, n, "Do holds the Locker's 2 permits")
		assert.NotZero(t, l.Token())
		assert.NoError(t, l.Err())
		hs, err := s.Holders(ctx)
		require.NoError(t, err)
		require.Len(t, hs, 1)
		assert.Equal(t, 2, hs[0].Count)
		return nil
	})
	require.NoError(t, err)
	n, err := s.Available(bg())
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	assert.ErrorIs(t, l.Err(), redisync.ErrNotHeld)
	assert.Zero(t, l.Token())
	assert.ErrorIs(t, l.Unlock(bg()), redisync.ErrNotHeld, "nothing held")
	assert.True(t, holderKeysGone(t, e, s))
}

func TestGoroutinesSharingALockerExcludeEachOther(t *testing.T) {
	e := setup(t)
	s := New(e.C, "sem:shared", 10) // permits are plenty: only the handle excludes
	l := s.Locker(1)
	require.NoError(t, l.Lock(bg()))
	ok, err := l.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok, "TryLock on a held handle")

	got := make(chan error, 1)
	go func() { got <- l.Lock(bg()) }()
	select {
	case err := <-got:
		t.Fatalf("a second goroutine got in while the handle held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	first := l.Token()
	require.NoError(t, l.Unlock(bg()))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting goroutine was not let in after Unlock")
	}
	assert.Greater(t, l.Token(), first, "a new Permit, a new token")
	n, err := s.Available(bg())
	require.NoError(t, err)
	assert.Equal(t, 9, n, "one Permit at a time")
	require.NoError(t, l.Unlock(bg()))

	// Separate handles are separate acquisitions.
	a, b := s.Locker(5), s.Locker(5)
	require.NoError(t, a.Lock(bg()))
	ok, err = b.TryLock(bg())
	require.NoError(t, err)
	assert.True(t, ok, "capacity for both")
	ok, err = s.Locker(1).TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok, "the pool is exhausted")
	require.NoError(t, a.Unlock(bg()))
	require.NoError(t, b.Unlock(bg()))
	assert.True(t, holderKeysGone(t, e, s))
}

func TestALockerReportsTheLossOfItsPermits(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(600*time.Millisecond))
	s := New(e.C, "sem:lost", 3)
	l := s.Locker(2)
	require.NoError(t, l.Lock(bg()))
	done := l.Done()
	ok, err := s.ForceUnlock(bg())
	require.NoError(t, err)
	require.True(t, ok)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the loss was not signalled")
	}
	assert.ErrorIs(t, l.Err(), redisync.ErrLockLost)
	assert.Zero(t, l.Token())
	assert.ErrorIs(t, l.Unlock(bg()), redisync.ErrLockLost)
	assert.ErrorIs(t, l.Err(), redisync.ErrLockLost, "the last Permit was lost")
	require.NoError(t, l.Lock(bg()), "the handle is usable again")
	assert.NoError(t, l.Err())
	require.NoError(t, l.Unlock(bg()))
}

func TestLockerRejectsBadCounts(t *testing.T) {
	e := setup(t)
	s := New(e.C, "sem:bad", 2)
	assert.Panics(t, func() { s.Locker(0) })
	assert.ErrorIs(t, s.Locker(MaxPermits+1).Lock(bg()), ErrBadCount)
	err := s.Locker(3).Lock(bg())
	assert.ErrorIs(t, err, ErrTooMany)
	assert.NotContains(t, err.Error(), "\n")
	assert.Contains(t, err.Error(), `"sem:bad"`)
}

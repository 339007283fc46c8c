package rwlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestRWMutexTokenDoneErrFollowTheWriteHoldThenTheReadHolds(t *testing.T) {
	e := setup(t)
	rw := New(e.C, "rw:surface")
	assert.Zero(t, rw.Token())
	assert.ErrorIs(t, rw.Err(), redisync.ErrNotHeld)
	assert.True(t, closed(rw.Done()), "no hold: Done is closed")

	require.NoError(t, rw.Lock(bg()))
	assert.NotZero(t, rw.Token())
	assert.Equal(t, rw.WriteLocker().Token(), rw.Token(), "writing: the write hold's token")
	assert.NoError(t, rw.Err())
	done := rw.Done()
	assert.False(t, closed(done))
	require.NoError(t, rw.Unlock(bg()))
	assert.True(t, closed(done), "Unlock ends the hold Done followed")
	assert.ErrorIs(t, rw.Err(), redisync.ErrNotHeld)
	assert.Zero(t, rw.Token())

	require.NoError(t, rw.RLock(bg()))
	assert.NotZero(t, rw.Token())
	assert.Equal(t, rw.ReadLocker().Token(), rw.Token(), "reading: the read holds' token")
	assert.NoError(t, rw.Err())
	done = rw.Done()
	require.NoError(t, rw.RUnlock(bg()))
	assert.True(t, closed(done))
	assert.ErrorIs(t, rw.Err(), redisync.ErrNotHeld)
}

func TestRWMutexSurfaceAcrossADowngrade(t *testing.T) {
	e := setup(t)
	rw := New(e.C, "rw:downgrade", WithReentrant())
	require.NoError(t, rw.Lock(bg()))
	wtok := rw.Token()
	require.NoError(t, rw.RLock(bg()))
	assert.Equal(t, wtok, rw.Token(), "holding both: the write hold is reported")
	wdone := rw.Done()

	require.NoError(t, rw.Unlock(bg())) // downgrade
	assert.True(t, closed(wdone), "the write hold ended")
	assert.NoError(t, rw.Err(), "still reading")
	assert.Equal(t, wtok, rw.Token(), "the read phase a downgrade leaves carries the write's token")
	rdone := rw.Done()
	assert.False(t, closed(rdone), "Done now follows the read holds")
	ok, err := New(e.C, "rw:downgrade").TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok, "the lock is read-locked by the downgrade")

	require.NoError(t, rw.RUnlock(bg()))
	assert.True(t, closed(rdone))
	assert.ErrorIs(t, rw.Err(), redisync.ErrNotHeld)
	assert.Zero(t, rw.Token())
}

func TestRWMutexErrReportsALostWriteHold(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(600*time.Millisecond))
	rw := New(e.C, "rw:lost")
	require.NoError(t, rw.Lock(bg()))
	done := rw.Done()
	e.Do(t, "DEL", "rw:lost") // the next renewal finds the hold gone
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the loss was not signalled")
	}
	assert.ErrorIs(t, rw.Err(), redisync.ErrLockLost)
	assert.True(t, closed(rw.Done()))
	assert.ErrorIs(t, rw.Unlock(bg()), redisync.ErrLockLost)
	assert.ErrorIs(t, rw.Err(), redisync.ErrLockLost, "the last hold was lost: Err keeps saying so")
	require.NoError(t, rw.RLock(bg()))
	assert.NoError(t, rw.Err(), "a new hold is reported")
	require.NoError(t, rw.RUnlock(bg()))
}

func TestDoOnAnRWMutexRunsUnderTheWriteLock(t *testing.T) {
	e := setup(t)
	rw, other := New(e.C, "rw:do"), New(e.C, "rw:do")
	err := redisync.Do(bg(), rw, func(ctx context.Context) error {
		assert.NotZero(t, rw.Token())
		ok, err := other.TryRLock(ctx)
		assert.NoError(t, err)
		assert.False(t, ok, "a reader while Do holds the RWMutex")
		return nil
	})
	require.NoError(t, err)
	assert.ErrorIs(t, rw.Err(), redisync.ErrNotHeld)
	e.WaitEmpty(t)
}

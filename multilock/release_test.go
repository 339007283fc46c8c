package multilock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/rlock"
)

// Defect 3 of issue 12: when a component failed to release, Unlock forgot
// it — a retry said ErrNotHeld while the component stayed held. The failed
// component must be remembered and released by the retry.
func TestUnlockRetryReleasesTheComponentsThatFailed(t *testing.T) {
	e1, e2 := setup(t), setup(t)
	// "a" (released last) lives on the server that will stall.
	a, b := rlock.New(e2.C, "a"), rlock.New(e1.C, "b")
	m := New(a, b)
	require.NoError(t, m.Lock(bg()))

	e2.Srv.Pause()
	ctx, cancel := context.WithTimeout(bg(), 300*time.Millisecond)
	err := m.Unlock(ctx)
	cancel()
	e2.Srv.Resume()
	require.Error(t, err, "a's release cannot have been confirmed")
	assert.Contains(t, err.Error(), "releasing a")
	select {
	case <-m.Done():
	default:
		t.Fatal("Done open after the last Unlock")
	}
	assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld)
	assert.Zero(t, e1.Int(t, "EXISTS", "b"), "b was released")

	require.NoError(t, m.Unlock(bg()), "the retry releases what failed")
	// Well before the watchdog lease (30 s) would let the key expire.
	locktest.Eventually(t, 3*time.Second, func() bool { return e2.Int(t, "EXISTS", "a") == 0 }, "a released")
	assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrNotHeld, "nothing is owed any more")
	require.NoError(t, m.Lock(bg()), "usable again")
	require.NoError(t, m.Unlock(bg()))
	assert.Zero(t, e2.Int(t, "EXISTS", "a"))
}

package multilock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/rlock"
)

// Defect 3 of issue 12: when a component failed to release, Unlock forgot
// it — a retry said ErrNotHeld while the component stayed held. Here the
// component's release outlives the Unlock's ctx and lands by itself.
func TestUnlockWithAStalledComponentStillReleasesIt(t *testing.T) {
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

	// The component stopped waiting, not releasing: its own hold finishes
	// the release (internal/hold), so the multilock owes nothing, and a
	// second Unlock is ErrNotHeld, as on any handle.
	assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrNotHeld, "nothing is owed")
	// Well before the watchdog lease (30 s) would let the key expire.
	locktest.Eventually(t, 3*time.Second, func() bool { return e2.Int(t, "EXISTS", "a") == 0 }, "a released")
	require.NoError(t, m.Lock(bg()), "usable again")
	require.NoError(t, m.Unlock(bg()))
	assert.Zero(t, e2.Int(t, "EXISTS", "a"))
}

// failingUnlock is a component whose next Unlock fails without releasing
// (as any Locker's may), to check the multilock's own bookkeeping.
type failingUnlock struct {
	*rlock.Mutex
	fail atomic.Bool
}

func (f *failingUnlock) Unlock(ctx context.Context) error {
	if f.fail.Swap(false) {
		return errors.New("injected: release failed")
	}
	return f.Mutex.Unlock(ctx)
}

// Defect 3 of issue 12, for a component whose Unlock reports a failure: the
// multilock remembers it, and the retry releases it instead of saying
// ErrNotHeld while the component stays held and renewed. Fails under
// -tags mutant_multilock_forget.
func TestUnlockRetryReleasesTheComponentsThatFailed(t *testing.T) {
	e := setup(t)
	a := &failingUnlock{Mutex: rlock.New(e.C, "a")}
	b := rlock.New(e.C, "b")
	m := New(a, b)
	require.NoError(t, m.Lock(bg()))
	a.fail.Store(true)
	err := m.Unlock(bg())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "releasing a")
	assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld, "the hold ended locally")
	assert.False(t, e.Exists(t, "b"), "b was released")
	assert.True(t, e.Exists(t, "a"), "a's release failed")

	require.NoError(t, m.Unlock(bg()), "the retry releases what failed")
	assert.False(t, e.Exists(t, "a"), "a released")
	assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrNotHeld, "nothing is owed any more")
	require.NoError(t, m.Lock(bg()), "usable again")
	require.NoError(t, m.Unlock(bg()))
	assert.Zero(t, e.DBSize(t))
}

package multilock

import (
	"context"
	"errors"
	"strconv"
	"sync"
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
// ErrNotHeld while the component stays held and renewed (mutant
// multilock_forget).
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

// Issue 22's defect 3, on a multilock: an Unlock while its Lock's round is
// in flight (the server stopped, or paused for writes) holds nothing of its
// own. It is ErrNotHeld at once and sends nothing; the hold the round then
// takes stands, Done open, and nobody else gets the components — the
// Unlock neither waits for the round nor releases what the round took.
func TestStrayUnlockDuringLockIsErrNotHeldAndLeavesTheNewHold(t *testing.T) {
	const (
		stall = 3 * time.Second // CLIENT PAUSE's; ended early, once Unlock has returned
		// margin for a loaded machine (2 shared cores), as in the root's
		// ctx-bound table.
		margin = 750 * time.Millisecond
	)
	for _, oneScript := range []bool{false, true} {
		for _, pause := range []string{"sigstop", "client-pause-write"} {
			t.Run(map[bool]string{false: "each", true: "one-script"}[oneScript]+"/"+pause, func(t *testing.T) {
				t.Parallel()
				e := setup(t)
				a, b := "stray:a", "stray:b"
				cb := e.Client(t) // b on a Client of its own: a TryLock per component
				if oneScript {
					cb = e.C
				}
				m := New(rlock.New(e.C, a), rlock.New(cb, b))
				require.Equal(t, oneScript, m.Atomic())
				resume := e.Srv.Resume
				if pause == "sigstop" {
					e.Srv.Pause()
				} else {
					e.Do(t, "CLIENT", "PAUSE", strconv.Itoa(int(stall.Milliseconds())), "WRITE")
					resume = func() { e.Do(t, "CLIENT", "UNPAUSE") }
				}
				locked := make(chan error, 1)
				go func() { locked <- m.Lock(bg()) }()
				time.Sleep(200 * time.Millisecond) // the round is on its way
				ctx, cancel := context.WithTimeout(bg(), 300*time.Millisecond)
				start := time.Now()
				err := m.Unlock(ctx)
				took := time.Since(start)
				cancel()
				resume()
				assert.ErrorIs(t, err, redisync.ErrNotHeld, "the multilock held nothing when Unlock came")
				assert.Less(t, took, 300*time.Millisecond+redisync.UndoWait+margin, "the Unlock waited for the round")
				require.NoError(t, <-locked)
				require.NoError(t, m.Err())
				select {
				case <-m.Done():
					t.Fatal("Done closed while held")
				default:
				}
				assert.True(t, e.Exists(t, a) && e.Exists(t, b), "the Lock's hold is in Redis while Done is open: %s", e.Describe(t))
				ok, err := New(rlock.New(e.Client(t), a), rlock.New(e.Client(t), b)).TryLock(bg())
				require.NoError(t, err)
				assert.False(t, ok, "another client took the components while the multilock holds them")
				require.NoError(t, m.Unlock(bg()))
				assert.Zero(t, e.DBSize(t), "%s", e.Describe(t))
			})
		}
	}
}

// Every wait for another call of the multilock in progress is bounded by
// the waiter's ctx: here a nested round of a reentrant multilock waits on a
// server paused for writes, and a TryLock, a Lock and an Unlock of the
// hold already there each return their ctx's error within UndoWait of its
// end. The Unlock's releases are not lost: the round sends them when it
// ends, so the one Unlock left frees everything.
func TestCallsWaitingForARoundInProgressHonourTheirCtx(t *testing.T) {
	e := setup(t)
	re := rlock.WithReentrant()
	m := NewReentrant(rlock.New(e.C, "{w}a", re), rlock.New(e.C, "{w}b", re))
	require.NoError(t, m.Lock(bg()))
	e.Do(t, "CLIENT", "PAUSE", "3000", "WRITE") // ended early, once the calls have returned
	nested := make(chan error, 1)
	go func() { nested <- m.Lock(bg()) }()
	time.Sleep(200 * time.Millisecond) // the nested round holds the multilock's op
	calls := map[string]func(context.Context) error{
		"TryLock": func(ctx context.Context) error { _, err := m.TryLock(ctx); return err },
		"Lock":    m.Lock,
		"Unlock":  m.Unlock,
	}
	const (
		deadline = 300 * time.Millisecond
		margin   = 750 * time.Millisecond // a loaded machine, as in the root's ctx-bound table
	)
	var wg sync.WaitGroup
	for name, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(bg(), deadline)
			defer cancel()
			start := time.Now()
			err := call(ctx)
			took := time.Since(start)
			assert.ErrorIs(t, err, context.DeadlineExceeded, "%s", name)
			assert.Less(t, took, deadline+redisync.UndoWait+margin, "%s waited for the round", name)
		}()
	}
	wg.Wait()
	e.Do(t, "CLIENT", "UNPAUSE")
	require.NoError(t, <-nested)
	require.NoError(t, m.Err(), "the nested hold stands")
	require.NoError(t, m.Unlock(bg()))
	assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld)
	assert.Zero(t, e.DBSize(t), "the Unlock that gave up left a hold: %s", e.Describe(t))
	assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrNotHeld)
}

package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
)

// closedWithin reports whether ch closes within d.
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// Issue 12, defect 2: `defer mu.Unlock(ctx)` with a request context that has
// already ended must still release the lock, not leave it renewed until the
// Client closes.
func TestUnlockWithAnEndedContextStillReleases(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(900*time.Millisecond))
	for _, nested := range []bool{false, true} {
		name := "mutex:unlock-ctx"
		if nested {
			name += ":nested"
		}
		m := New(e.C, name, WithReentrant())
		require.NoError(t, m.Lock(bg()))
		if nested {
			require.NoError(t, m.Lock(bg()))
		}
		ctx, cancel := context.WithCancel(bg())
		cancel()
		err := m.Unlock(ctx)
		if nested {
			assert.True(t, err == nil || err == context.Canceled, "unexpected %v", err)
			err = m.Unlock(ctx)
		}
		assert.True(t, err == nil || err == context.Canceled, "Unlock returns nil or ctx.Err(), got %v", err)
		assert.True(t, closedWithin(m.Done(), 0), "the hold ends locally at once")
		assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld)
		eventually(t, 2*time.Second, func() bool { return !e.Exists(t, name) }, "the release reached Redis")
		// A renewal still running would recreate nothing, but a waiter must
		// get in well before the lease would have run out.
		other := New(e.Client(t), name)
		wctx, wcancel := context.WithTimeout(bg(), 5*time.Second)
		require.NoError(t, other.Lock(wctx), "a waiter gets in")
		wcancel()
		time.Sleep(400 * time.Millisecond) // past a renewal interval of the old hold
		require.NoError(t, other.Err(), "no stale renewal disturbed the new holder")
		require.NoError(t, other.Unlock(bg()))
	}
}

// Issue 12, defect 5: two handles that share an owner id each release their
// own hold; 2 Locks + 2 Unlocks leave the lock free.
func TestSharedOwnerHandlesEachReleaseTheirOwnHold(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(900*time.Millisecond))
	const name = "mutex:shared-owner"
	a := New(e.C, name, WithOwner("svc:1"))
	b := New(e.C, name, WithOwner("svc:1"))
	require.NoError(t, a.Lock(bg()))
	require.NoError(t, b.Lock(bg()))
	require.NoError(t, a.Unlock(bg()))
	assert.True(t, closedWithin(a.Done(), 0), "a's hold ended")
	assert.NoError(t, b.Err(), "b still holds")
	n, err := b.HoldCount(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, b.Unlock(bg()))
	assert.False(t, e.Exists(t, name), "2 Locks + 2 Unlocks leave the lock free: %s", e.Describe(t))
	time.Sleep(400 * time.Millisecond) // a renewal would not bring it back either
	assert.False(t, e.Exists(t, name))
}

// Issue 12, defect 9: a grant whose lease has already run out by the client's
// clock when the reply arrives is never reported; Lock goes on and returns a
// hold that is actually valid.
func TestLockNeverReportsAGrantWhoseLeaseRanOut(t *testing.T) {
	e := setup(t)
	const lease = time.Second
	m := New(pausable(t, e), "mutex:expired-grant", WithLease(lease))
	e.Srv.Pause()
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
		defer cancel()
		got <- m.Lock(ctx)
	}()
	time.Sleep(lease + 500*time.Millisecond) // the acquire waits in the socket
	e.Srv.Resume()
	require.NoError(t, <-got)
	time.Sleep(100 * time.Millisecond)
	assert.NoError(t, m.Err(), "the hold Lock reported must still be valid")
	assert.False(t, closedWithin(m.Done(), 0), "Done must not close right after Lock")
	_ = m.Unlock(bg())
}

// Issue 12, defect 10: a live ctx never sees context.DeadlineExceeded from
// an internal bound; a server stall only delays Lock.
func TestLockWithALiveContextRidesOutAServerStall(t *testing.T) {
	e := setup(t)
	m := New(pausable(t, e), "mutex:stall")
	e.Srv.Pause()
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), 15*time.Second)
		defer cancel()
		got <- m.Lock(ctx)
	}()
	time.Sleep(3 * time.Second)
	e.Srv.Resume()
	require.NoError(t, <-got, "a 3 s stall under a 15 s ctx is a delay, not an error")
	require.NoError(t, m.Unlock(bg()))
}

// pausable is a Client on e's server with one connection, open and used (a
// warm-up Lock): a call made while the server is paused waits in its
// socket, so the client's clock runs while Redis does not. (On a fresh
// Client the call waits before it is sent — in a lazily opened
// connection's handshake — and goes out only after the resume: the
// defects these tests are for never show.)
func pausable(t *testing.T, e *locktest.Env) *redisync.Client {
	c := redisync.New(e.Srv.OneConnClient(t))
	t.Cleanup(func() { c.Close() })
	warm := New(c, "pausable:warm-up")
	require.NoError(t, warm.Lock(bg()))
	require.NoError(t, warm.Unlock(bg()))
	return c
}

// Issue 12, defect 10: a transport error while waiting (the server restarts)
// is retried within ctx instead of ending Lock.
func TestLockWaitsAcrossAServerRestart(t *testing.T) {
	e := setup(t)
	const name = "mutex:restart"
	holder := New(e.Client(t, redisync.WithWatchdogTimeout(1500*time.Millisecond)), name)
	require.NoError(t, holder.Lock(bg()))
	m := New(e.C, name)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
		defer cancel()
		got <- m.Lock(ctx)
	}()
	e.WaitSubscribed(t, "redisson_lock__channel:{"+name+"}")
	// Down long enough for the waiter's next attempts (every MaxPoll, 1 s)
	// to meet a refused connection; then back, empty: nothing persists.
	e.Srv.Kill()
	time.Sleep(2500 * time.Millisecond)
	e.Srv.Restart()
	err := <-got
	require.NoError(t, err, "Lock retries transport errors within ctx")
	require.NoError(t, m.Unlock(bg()))
	assert.Eventually(t, func() bool { return errors.Is(holder.Err(), redisync.ErrLockLost) }, 10*time.Second, 50*time.Millisecond)
}

// Releases reach Redis before the handle's next acquire: goroutines sharing
// one handle, each unlocking with an already-ended ctx, never see the next
// Lock re-enter the previous hold (its token would repeat) and never
// overlap; nothing is left at the end.
func TestReleasesWithEndedContextsPrecedeTheNextAcquire(t *testing.T) {
	e := setup(t)
	const name = "mutex:unlock-order"
	m := New(e.C, name)
	ended, cancel := context.WithCancel(bg())
	cancel()
	const goroutines, each = 4, 40
	var (
		mu     sync.Mutex
		tokens []uint64
		inside atomic.Int32
		wg     sync.WaitGroup
	)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
				err := m.Lock(ctx)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					t.Error("two goroutines inside at once")
				}
				mu.Lock()
				tokens = append(tokens, m.Token())
				mu.Unlock()
				inside.Add(-1)
				if err := m.Unlock(ended); err != nil && err != context.Canceled {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Len(t, tokens, goroutines*each)
	for i := 1; i < len(tokens); i++ {
		require.Greater(t, tokens[i], tokens[i-1], "grant %d re-entered the previous hold", i)
	}
	eventually(t, 5*time.Second, func() bool { return !e.Exists(t, name) }, "the last release reached Redis")
}

// An Unlock whose ctx ends while the server is stopped for longer than the
// release task's first sends are bounded by (engine.CompensateTimeout
// after ctx's end, and once more without a WAIT) returns ctx.Err() at once,
// and its release still lands when the server is back: the task sends it
// again until it is answered, instead of leaving the lock held for the
// rest of its lease until the handle's next operation.
func TestUnlockCancelledInALongStallReleasesWhenTheServerReturns(t *testing.T) {
	e := setup(t)
	const name = "rlock:unlock-long-stall"
	m := New(e.C, name)
	require.NoError(t, m.Lock(bg()))
	e.Srv.Pause()
	ctx, cancel := context.WithTimeout(bg(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.ErrorIs(t, m.Unlock(ctx), context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 300*time.Millisecond+redisync.UndoWait+500*time.Millisecond)
	select {
	case <-m.Done():
	default:
		t.Error("Done still open after Unlock returned")
	}
	time.Sleep(5 * time.Second)
	e.Srv.Resume()
	eventually(t, 2*time.Second, func() bool { return !e.Exists(t, name) }, "the release landed after the server resumed")
	require.NoError(t, m.Lock(bg()))
	require.NoError(t, m.Unlock(bg()))
	e.WaitEmpty(t)
}

// A release changes nothing of a hash that no longer carries the hold as
// the hold left it: another token, a count that is no count, or a
// Redisson RReadWriteLock reader's "mode" and count (Redisson takes a hash
// without "mode" for free and joins it: a read-write lock's hash now). On
// a Client without holder info (the release's common path) as on one with
// it (the rare path).
func TestReleaseLeavesAHashThatIsNoLongerTheHoldAlone(t *testing.T) {
	const name, reader = "changed", "9a3c1f0e-1d2b-4c5d-8e7f-0a1b2c3d4e5f:7"
	for _, info := range []bool{false, true} {
		e := setup(t, redisync.WithHolderInfo(info))
		for _, change := range []struct {
			label string
			do    func(m *Mutex)
		}{
			{"another token", func(m *Mutex) {
				e.Do(t, "HSET", name, "redisync:token", strconv.FormatUint(m.Token()+1, 10))
			}},
			{"a count that is no count", func(m *Mutex) { e.Do(t, "HSET", name, m.Owner(), "x") }},
			{"a Redisson reader joined", func(m *Mutex) {
				e.Do(t, "HSET", name, "mode", "read", reader, "1")
				e.Do(t, "SET", "{"+name+"}:"+reader+":rwlock_timeout:1", "1", "PX", "60000")
			}},
		} {
			what := fmt.Sprintf("holder info %v, %s", info, change.label)
			m := New(e.C, name, WithLease(time.Minute))
			require.NoError(t, m.Lock(bg()), what)
			change.do(m)
			before, err := e.Do(t, "HGETALL", name).AsStrMap()
			require.NoError(t, err)
			err = m.Unlock(bg())
			after, _ := e.Do(t, "HGETALL", name).AsStrMap()
			assert.Equal(t, before, after, "%s: the release (Unlock: %v) left the hash as it was", what, err)
			e.Do(t, "DEL", name)
		}
	}
}

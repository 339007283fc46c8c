package semaphore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Issue 12, defect 2, for permits: Release with a ctx that is already done
// still gives the permits back (the everyday defer p.Release(ctx) with a
// request context); a second Release is ErrNotHeld and changes nothing.
// On ae978fd the permit stayed held and renewed.
func TestReleaseWithAnEndedContextStillReleases(t *testing.T) {
	// A lease well above the wait below: the permits must come back by the
	// release, not by expiry.
	e := setup(t, redisync.WithWatchdogTimeout(4*time.Second))
	const capacity = 3
	s := New(e.C, "sem:release-ctx", capacity)
	p, err := s.Acquire(bg(), 2)
	require.NoError(t, err)
	keep, err := s.Acquire(bg(), 1) // a holder that stays: its permit must not come back
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(bg())
	cancel()
	err = p.Release(ctx)
	assert.True(t, err == nil || err == context.Canceled, "Release returns nil or ctx.Err(), got %v", err)
	assert.True(t, isClosed(p.Done()), "the permit ends locally at once")
	assert.ErrorIs(t, p.Err(), redisync.ErrNotHeld)
	eventually(t, 1500*time.Millisecond, func() bool {
		n, err := s.Available(bg())
		return err == nil && n == capacity-1
	}, "the release reached Redis")

	assert.ErrorIs(t, p.Release(bg()), redisync.ErrNotHeld, "a second Release")
	assert.ErrorIs(t, p.Release(ctx), redisync.ErrNotHeld, "a second Release with a done ctx")
	time.Sleep(1500 * time.Millisecond) // past a renewal interval: nothing comes back
	n, err := s.Available(bg())
	require.NoError(t, err)
	assert.Equal(t, capacity-1, n, "a second Release changes nothing")
	hs, err := s.Holders(bg())
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, keep.ID(), hs[0].Owner)
	assert.NoError(t, keep.Err())
	require.NoError(t, keep.Release(bg()))
	assert.True(t, holderKeysGone(t, e, s), "keys left: %v", e.Keys(t))
}

// Issue 12, defect 9, for permits: a grant whose lease had already run out
// by the client's clock when the reply came (the server stalled past the
// lease with the acquire in its socket) is never returned; Acquire goes on
// and returns a Permit that is actually held. On ae978fd Acquire returned
// the expired grant and Done closed at once.
func TestAcquireNeverReturnsAPermitWhoseLeaseRanOut(t *testing.T) {
	e := setup(t)
	const lease = time.Second
	// One connection, open and used (a warm-up Acquire), so that the
	// acquire below waits in its socket while the server is paused; on a
	// fresh Client it waits before it is sent, and the grant is fresh.
	c := redisync.New(e.Srv.OneConnClient(t))
	t.Cleanup(func() { c.Close() })
	s := New(c, "sem:expired-grant", 1, WithLease(lease))
	warm, err := s.Acquire(bg(), 1)
	require.NoError(t, err)
	require.NoError(t, warm.Release(bg()))
	e.Srv.Pause()
	type got struct {
		p   *Permit
		err error
	}
	ch := make(chan got, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
		defer cancel()
		p, err := s.Acquire(ctx, 1)
		ch <- got{p, err}
	}()
	time.Sleep(lease + 500*time.Millisecond) // the acquire waits in the socket
	e.Srv.Resume()
	r := <-ch
	require.NoError(t, r.err)
	time.Sleep(100 * time.Millisecond)
	assert.NoError(t, r.p.Err(), "the Permit Acquire returned must still be held")
	assert.False(t, isClosed(r.p.Done()), "Done must not close right after Acquire")
	hs, err := s.Holders(bg())
	require.NoError(t, err)
	require.Len(t, hs, 1, "exactly the returned permit is held")
	assert.Equal(t, r.p.ID(), hs[0].Owner)
	assert.NoError(t, r.p.Release(bg()))
}

// Close reports a Permit lost (Err matches ErrLockLost and ErrClosed);
// Release after Close removes what is left, as after any other loss, and
// says so: the permits are free for another Client at once, not after the
// lease. Before, Release returned ErrClosed and sent nothing.
func TestReleaseAfterCloseReturnsThePermits(t *testing.T) {
	e := setup(t)
	s := New(e.C, "afterclose:sem", 1)
	p, err := s.Acquire(bg(), 1)
	require.NoError(t, err)
	require.NoError(t, e.C.Close())
	require.ErrorIs(t, p.Err(), redisync.ErrLockLost)
	rerr := p.Release(bg())
	assert.ErrorIs(t, rerr, redisync.ErrLockLost)
	assert.ErrorIs(t, rerr, redisync.ErrClosed)
	other := New(e.Client(t), "afterclose:sem", 1)
	q, ok, err := other.TryAcquire(bg(), 1)
	require.NoError(t, err)
	require.True(t, ok, "the permit released after Close is still taken; Release said %v", rerr)
	require.NoError(t, q.Release(bg()))
	// A Permit that owes nothing more is refused after Close, without I/O.
	assert.ErrorIs(t, p.Release(bg()), redisync.ErrClosed)
}

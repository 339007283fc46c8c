package semaphore

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
)

func TestFiftyWorkersNeverExceedFivePermits(t *testing.T) {
	e := setup(t)
	const capacity, workers, total = 5, 50, 5000
	var (
		inside, peak atomic.Int32
		granted      atomic.Int64
		mu           sync.Mutex
		tokens       []uint64
		wg           sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := New(e.C, "sem:pool", capacity)
			for granted.Load() < total {
				p, err := s.Acquire(bg(), 1)
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
				}
				mu.Lock()
				tokens = append(tokens, p.Token())
				mu.Unlock()
				granted.Add(1)
				time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond) // overlap with others
				inside.Add(-1)
				if err := p.Release(bg()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d acquisitions, at most %d at once", granted.Load(), peak.Load())
	require.GreaterOrEqual(t, granted.Load(), int64(total))
	require.LessOrEqual(t, peak.Load(), int32(capacity), "more holders than permits")
	seen := map[uint64]bool{}
	for _, tok := range tokens {
		require.False(t, seen[tok], "token %d issued twice", tok)
		seen[tok] = true
	}
	s := New(e.C, "sem:pool", capacity)
	avail, err := s.Available(bg())
	require.NoError(t, err)
	assert.Equal(t, capacity, avail)
	assert.True(t, holderKeysGone(t, e, s), "keys left: %v", e.Keys(t))
	assert.Zero(t, eng(e.C).Watchdog.Len())
}

func TestPermitsAreHeldInRedisWithOwnerAndExpiry(t *testing.T) {
	// 1 s, renewed every third: a renewal may be late by 600 ms before the
	// permit is lost. 300 ms (late by 200 ms) lost it once at load 12.
	const lease = time.Second
	e := setup(t, redisync.WithWatchdogTimeout(lease))
	s := New(e.C, "sem:holders", 4)
	p, err := s.Acquire(bg(), 3)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(p.ID(), e.C.ID()+":"))
	time.Sleep(2 * lease) // renewed past two leases
	require.NoError(t, p.Err())
	hs, err := s.Holders(bg())
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, p.ID(), hs[0].Owner)
	assert.Equal(t, 3, hs[0].Count)
	assert.Greater(t, hs[0].TTL, time.Duration(0))
	assert.LessOrEqual(t, hs[0].TTL, lease)
	avail, err := s.Available(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, avail)
	_, ok, err := s.TryAcquire(bg(), 2)
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, p.Release(bg()))
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed by Release")
	}
	assert.ErrorIs(t, p.Err(), redisync.ErrNotHeld)
}

func TestStoppedRenewalGivesThePermitsBackWithinTheLease(t *testing.T) {
	const lease = 400 * time.Millisecond
	e := setup(t, redisync.WithMaxPoll(50*time.Millisecond))
	other := e.Client(t, redisync.WithWatchdogTimeout(lease))
	crashed := New(other, "sem:crash", 2)
	p, err := crashed.Acquire(bg(), 2)
	require.NoError(t, err)
	other.Close() // renewal stops; nothing is released
	assert.ErrorIs(t, p.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, p.Err(), redisync.ErrClosed)
	stopped := time.Now()

	s := New(e.C, "sem:crash", 2)
	q, err := s.Acquire(bg(), 2)
	require.NoError(t, err)
	waited := time.Since(stopped)
	t.Logf("permits back after %v", waited)
	assert.Less(t, waited, lease+time.Second)
	hs, err := s.Holders(bg())
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, q.ID(), hs[0].Owner, "the crashed holder was taken back")
	require.NoError(t, q.Release(bg()))
}

func TestFixedLeasePermitReportsItsLoss(t *testing.T) {
	e := setup(t)
	s := New(e.C, "sem:fixed", 1, WithLease(200*time.Millisecond))
	p, err := s.Acquire(bg(), 1)
	require.NoError(t, err)
	select {
	case <-p.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("fixed-lease permit did not report its end")
	}
	assert.ErrorIs(t, p.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, p.Release(bg()), redisync.ErrLockLost)
	avail, err := s.Available(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, avail)
}

func TestDoubleReleaseIsRejected(t *testing.T) {
	e := setup(t)
	s := New(e.C, "sem:double", 3)
	p, err := s.Acquire(bg(), 2)
	require.NoError(t, err)
	q, err := s.Acquire(bg(), 1)
	require.NoError(t, err)
	require.NoError(t, p.Release(bg()))
	avail, _ := s.Available(bg())
	require.Equal(t, 2, avail)
	assert.ErrorIs(t, p.Release(bg()), redisync.ErrNotHeld)
	avail, _ = s.Available(bg())
	assert.Equal(t, 2, avail, "a double release must not add permits")
	require.NoError(t, q.Release(bg()))
	avail, _ = s.Available(bg())
	assert.Equal(t, 3, avail)
}

func TestSetPermitsUpAndDown(t *testing.T) {
	e := setup(t, redisync.WithMaxPoll(30*time.Second))
	s := New(e.C, "sem:resize", 3)
	held := make([]*Permit, 3)
	for i := range held {
		var err error
		held[i], err = s.Acquire(bg(), 1)
		require.NoError(t, err)
	}
	// Down: holders keep their permits; nothing new until they drop below.
	require.NoError(t, s.SetPermits(bg(), 1))
	capNow, err := s.Capacity(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, capNow)
	stored, err := e.Do(t, "HGET", "sem:resize", "capacity").ToString()
	require.NoError(t, err)
	assert.Equal(t, "1", stored)
	for _, p := range held {
		assert.NoError(t, p.Err(), "a shrink revokes nothing")
	}
	avail, _ := s.Available(bg())
	assert.Zero(t, avail)
	_, _, err = s.TryAcquire(bg(), 2)
	assert.ErrorIs(t, err, ErrTooMany)
	require.NoError(t, held[0].Release(bg()))
	require.NoError(t, held[1].Release(bg()))
	_, ok, err := s.TryAcquire(bg(), 1)
	require.NoError(t, err)
	assert.False(t, ok, "still one held, capacity one")
	// Up: a waiter gets in at once. Its polls are 20 s apart (MaxPoll 30 s,
	// heartbeat a third of a minute), so only the wake-up can do that.
	patient := New(e.C, "sem:resize", 3, WithWaiterTimeout(time.Minute))
	got := make(chan *Permit, 1)
	go func() {
		p, err := patient.Acquire(bg(), 1)
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	eventually(t, 5*time.Second, func() bool { n, _ := s.Waiting(bg()); return n == 1 }, "waiter queued")
	require.NoError(t, s.SetPermits(bg(), 2))
	select {
	case p := <-got:
		require.NoError(t, p.Release(bg()))
	case <-time.After(5 * time.Second):
		t.Fatal("raising the capacity did not wake the waiter")
	}
	require.NoError(t, held[2].Release(bg()))
	assert.ErrorIs(t, s.SetPermits(bg(), -1), ErrBadCount)
}

func TestRandomCancellationsLeaveEveryPermitAvailable(t *testing.T) {
	e := setup(t)
	const capacity = 3
	_, cancelled := locktest.CancelStorm(t, 10, 100, func(r *rand.Rand) locktest.Acquirer { // 1,000 Acquire calls
		s := New(e.C, "sem:cancel", capacity, WithWaiterTimeout(time.Minute))
		return func(ctx context.Context) (func() error, error) {
			p, err := s.Acquire(ctx, 1+r.IntN(capacity))
			if err != nil {
				return nil, err
			}
			return func() error { return p.Release(bg()) }, nil
		}
	})
	assert.Greater(t, cancelled, int64(50))
	s := New(e.C, "sem:cancel", capacity)
	// A cancelled Acquire returns at once; a grant still in flight then is
	// given back by a Client task when its reply comes (one round trip).
	eventually(t, 3*time.Second, func() bool {
		avail, err := s.Available(bg())
		return err == nil && avail == capacity
	}, "every permit available")
	// Waiter places last a minute: only leaving explains an empty queue.
	eventually(t, 3*time.Second, func() bool { return holderKeysGone(t, e, s) }, "no holder or queue key left")
	assert.Zero(t, eng(e.C).Watchdog.Len())
	eventually(t, 5*time.Second, func() bool { return eng(e.C).Hub.Channels() == 0 }, "subscriptions released")
}

func TestLargeRequestIsNotStarvedBySmallOnes(t *testing.T) {
	e := setup(t)
	const capacity = 5
	ctx, cancel := context.WithCancel(bg())
	var wg sync.WaitGroup
	var small atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := New(e.C, "sem:fair", capacity)
			for ctx.Err() == nil {
				p, err := s.Acquire(ctx, 1)
				if err != nil {
					return
				}
				small.Add(1)
				time.Sleep(time.Millisecond)
				_ = p.Release(bg())
			}
		}()
	}
	eventually(t, 5*time.Second, func() bool { return small.Load() > 100 }, "small requests flowing")
	big := New(e.C, "sem:fair", capacity)
	bctx, bcancel := context.WithTimeout(bg(), 10*time.Second)
	defer bcancel()
	start := time.Now()
	p, err := big.Acquire(bctx, capacity)
	require.NoError(t, err, "the request for every permit was starved")
	t.Logf("all %d permits after %v (%d small grants so far)", capacity, time.Since(start), small.Load())
	hs, err := big.Holders(bg())
	require.NoError(t, err)
	require.Len(t, hs, 1, "the large request holds the semaphore alone")
	require.NoError(t, p.Release(bg()))
	cancel()
	wg.Wait()
}

func TestBadInput(t *testing.T) {
	e := setup(t)
	_, err := New(e.C, "", 1).Acquire(bg(), 1)
	assert.ErrorIs(t, err, redisync.ErrInvalidName)
	assert.Panics(t, func() { New(e.C, "x", 0) })
	_, err = New(e.C, "x", 1, WithLease(0)).Acquire(bg(), 1)
	assert.ErrorIs(t, err, redisync.ErrInvalidLease)
	s := New(e.C, "sem:bad", 2)
	_, err = s.Acquire(bg(), 0)
	assert.ErrorIs(t, err, ErrBadCount)
	_, _, err = s.TryAcquire(bg(), -1)
	assert.ErrorIs(t, err, ErrBadCount)
	assert.Zero(t, e.DBSize(t), "bad input touched Redis")
	_, err = s.Acquire(bg(), 3)
	assert.ErrorIs(t, err, ErrTooMany)
	assert.True(t, holderKeysGone(t, e, s), "a refused request left keys: %v", e.Keys(t))
	e.C.Close()
	_, err = s.Acquire(bg(), 1)
	assert.True(t, errors.Is(err, redisync.ErrClosed))
}

func TestReleaseWakesTheFirstWaiter(t *testing.T) {
	// Polls are 20 s apart (MaxPoll 30 s, heartbeat a third of a minute):
	// only the wake-up published by Release can hand the permits over fast.
	e := setup(t, redisync.WithMaxPoll(30*time.Second))
	s := New(e.C, "sem:wake", 2, WithWaiterTimeout(time.Minute))
	p, err := s.Acquire(bg(), 2)
	require.NoError(t, err)
	got := make(chan time.Time, 1)
	go func() {
		q, err := s.Acquire(bg(), 2)
		if err != nil {
			t.Error(err)
			return
		}
		got <- time.Now()
		_ = q.Release(bg())
	}()
	eventually(t, 5*time.Second, func() bool { n, _ := s.Waiting(bg()); return n == 1 }, "waiter queued")
	released := time.Now()
	require.NoError(t, p.Release(bg()))
	select {
	case at := <-got:
		t.Logf("woken %v after the release", at.Sub(released))
		assert.Less(t, at.Sub(released), 2*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("release did not wake the waiter")
	}
}

func TestForceUnlockTakesBackEveryPermit(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(300*time.Millisecond))
	s := New(e.C, "sem:force", 3)
	p, err := s.Acquire(bg(), 2)
	require.NoError(t, err)
	ok, err := New(e.C, "sem:force", 1).ForceUnlock(bg())
	require.NoError(t, err)
	assert.True(t, ok)
	avail, err := s.Available(bg())
	require.NoError(t, err)
	assert.Equal(t, 3, avail)
	select {
	case <-p.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("holder not told")
	}
	assert.ErrorIs(t, p.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, p.Release(bg()), redisync.ErrLockLost)
	avail, _ = s.Available(bg())
	assert.Equal(t, 3, avail, "releasing a taken-back permit adds nothing")
}

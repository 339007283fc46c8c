package fairlock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
)

// Issue 12, defect 11, for the fair lock: goroutines sharing one handle
// around a read-pause-write counter must not overlap.
func TestGoroutinesSharingOneHandleExcludeEachOther(t *testing.T) {
	e := setup(t)
	m := New(e.C, "fshared:counter")
	const goroutines, each = 3, 60
	var (
		counter atomic.Int64 // atomic only so that -race reports overlaps as a wrong count
		wg      sync.WaitGroup
	)
	for range goroutines {
		wg.Go(func() {
			for range each {
				if err := m.Lock(bg()); err != nil {
					t.Error(err)
					return
				}
				v := counter.Load()
				time.Sleep(200 * time.Microsecond)
				counter.Store(v + 1)
				if err := m.Unlock(bg()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(goroutines*each), counter.Load(), "critical sections overlapped")
	e.WaitEmpty(t)
}

func TestNestedLockOnADefaultHandleWaitsWithoutQueueing(t *testing.T) {
	e := setup(t)
	const name = "fshared:nested"
	m := New(e.C, name)
	require.NoError(t, m.Lock(bg()))
	tok := m.Token()
	ctx, cancel := context.WithTimeout(bg(), 300*time.Millisecond)
	defer cancel()
	assert.Equal(t, context.DeadlineExceeded, m.Lock(ctx))
	assert.Zero(t, queueLen(t, e, m), "a Lock waiting for its own handle must not queue in Redis")
	ok, err := m.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok)
	n, err := m.HoldCount(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, tok, m.Token())

	// Another goroutine's Lock gets a fresh hold once the first is unlocked.
	got := make(chan error, 1)
	go func() { got <- m.Lock(bg()) }()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, m.Unlock(bg()))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting goroutine never got the lock")
	}
	assert.Greater(t, m.Token(), tok)
	require.NoError(t, m.Unlock(bg()))
	e.WaitEmpty(t)
}

func TestWithReentrantAndNonReentrant(t *testing.T) {
	e := setup(t)
	const name = "fshared:modes"
	r := New(e.C, name, WithReentrant())
	require.NoError(t, r.Lock(bg()))
	tok := r.Token()
	ctx, cancel := context.WithTimeout(bg(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.Lock(ctx))
	n, err := r.HoldCount(bg())
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, tok, r.Token())
	require.NoError(t, r.Unlock(bg()))
	require.NoError(t, r.Unlock(bg()))
	e.WaitEmpty(t)

	nr := New(e.C, name, WithNonReentrant())
	require.NoError(t, nr.Lock(bg()))
	start := time.Now()
	assert.ErrorIs(t, nr.Lock(bg()), redisync.ErrNonReentrant)
	_, err = nr.TryLock(bg())
	assert.ErrorIs(t, err, redisync.ErrNonReentrant)
	assert.Less(t, time.Since(start), 5*time.Second)
	require.NoError(t, nr.Unlock(bg()))
	e.WaitEmpty(t)

	assert.Panics(t, func() { New(e.C, name, WithReentrant(), WithNonReentrant()) })
}

// As rlock's: a handle's latch field goes with its last Unlock while other
// handles of its owner hold (fair_release.lua and, with WithRedissonQueue,
// fair_redisson_release.lua), so handles made per request under one owner
// id leave the lock hash as small as the holds it has.
func TestLatchFieldGoesWithTheHandlesLastHold(t *testing.T) {
	for _, redisson := range []bool{false, true} {
		name := map[bool]string{false: "fshared:latch", true: "fshared:latch-redisson"}[redisson]
		t.Run(name, func(t *testing.T) {
			e := setup(t)
			opts := []Option{WithOwner("svc:fair")}
			if redisson {
				opts = append(opts, WithRedissonQueue(time.Minute))
			}
			keeper := New(e.C, name, opts...)
			require.NoError(t, keeper.Lock(bg()))
			fields := e.Int(t, "HLEN", name)
			for i := range 20 {
				h := New(e.C, name, opts...)
				require.NoError(t, h.Lock(bg()))
				require.Equal(t, fields+1, e.Int(t, "HLEN", name), "handle %d's latch is there while it holds", i)
				require.NoError(t, h.Unlock(bg()))
				require.Equal(t, fields, e.Int(t, "HLEN", name), "handle %d's Unlock takes its latch field: %s", i, e.Describe(t))
			}
			require.NoError(t, keeper.Unlock(bg()))
			e.WaitEmpty(t)
		})
	}
}

// Goroutines sharing one reentrant handle (WithReentrant, or WithOwner)
// loop Lock then Unlock: every Unlock releases, and the lock ends free (see
// rlock's TestGoroutinesSharingAReentrantHandleLeaveTheLockFree).
func TestGoroutinesSharingAReentrantHandleLeaveTheLockFree(t *testing.T) {
	for what, opt := range map[string]Option{"WithReentrant": WithReentrant(), "WithOwner": WithOwner("job-7")} {
		t.Run(what, func(t *testing.T) {
			e := setup(t)
			const name = "shared:reentrant"
			locktest.ShareReentrantHandle(t, New(e.C, name, opt), 8, 1500*time.Millisecond)
			assert.False(t, e.Exists(t, name), "lock left held after every Unlock: %s", e.Describe(t))
		})
	}
}

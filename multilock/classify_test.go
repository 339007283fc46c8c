package multilock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// TestTheSameLockTwiceIsRefused: an RWMutex and its WriteLocker are one
// write lock; two handles of one name (a transfer from account 17 to
// account 17) are one lock too. A round over them would wait for itself
// until ctx ends: Lock and TryLock refuse at once, without I/O, with an
// error that names the lock and matches ErrSameLock.
func TestTheSameLockTwiceIsRefused(t *testing.T) {
	e := setup(t)
	rw := rwlock.New(e.C, "{bank}:rw")
	cases := map[string]*Mutex{
		"RWMutex and its WriteLocker": New(rw, rw.WriteLocker()),
		"two handles of one name":     New(rlock.New(e.C, "{bank}:acct:17"), rlock.New(e.C, "{bank}:acct:17")),
		"one of them nested":          New(New(rlock.New(e.C, "{bank}:acct:17"), rlock.New(e.C, "{bank}:acct:9")), rlock.New(e.C, "{bank}:acct:17")),
	}
	for what, m := range cases {
		t.Run(what, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
			defer cancel()
			start := time.Now()
			err := m.Lock(ctx)
			assert.Less(t, time.Since(start), 2*time.Second, "Lock waited for itself")
			require.ErrorIs(t, err, ErrSameLock)
			assert.Contains(t, err.Error(), `"{bank}:`)
			ok, err := m.TryLock(ctx)
			assert.False(t, ok)
			require.ErrorIs(t, err, ErrSameLock)
			assert.ErrorIs(t, m.Unlock(ctx), redisync.ErrNotHeld)
			assert.Zero(t, e.DBSize(t), "nothing written: %v", e.Keys(t))
		})
	}
}

// TestOneScriptRoundIsAnAcquisitionLikeAnyOther: a multilock whose round
// is one script (rlocks on one Client) passes the Client's eviction check
// as each rlock's own Lock would — EvictionRefuse refuses it — and reports
// each component's grant (EventAcquired), as its release reports each
// EventReleased.
func TestOneScriptRoundIsAnAcquisitionLikeAnyOther(t *testing.T) {
	t.Run("EvictionRefuse", func(t *testing.T) {
		srv := redistest.Start(t)
		rc := srv.Client(t)
		redistest.Do(t, rc, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
		redistest.Do(t, rc, "CONFIG", "SET", "maxmemory", "1gb")
		c := redisync.New(rc, redisync.WithEvictionCheck(redisync.EvictionRefuse))
		defer c.Close()
		m := New(rlock.New(c, "{ev}:a"), rlock.New(c, "{ev}:b"))
		require.True(t, m.Atomic())
		ok, err := m.TryLock(bg())
		assert.False(t, ok)
		require.ErrorIs(t, err, redisync.ErrEvictionPolicy)
		ctx, cancel := context.WithTimeout(bg(), 5*time.Second)
		defer cancel()
		require.ErrorIs(t, m.Lock(ctx), redisync.ErrEvictionPolicy)
		n, err := redistest.Do(t, rc, "DBSIZE").AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "nothing granted")
	})
	t.Run("events", func(t *testing.T) {
		var mu sync.Mutex
		count := map[redisync.EventKind]map[string]int{}
		e := locktest.Setup(t, redisync.WithObserver(redisync.ObserverFunc(func(ev redisync.Event) {
			mu.Lock()
			defer mu.Unlock()
			if count[ev.Kind] == nil {
				count[ev.Kind] = map[string]int{}
			}
			count[ev.Kind][ev.Primitive+" "+ev.Name]++
		})))
		m := New(rlock.New(e.C, "{obs}:a"), rlock.New(e.C, "{obs}:b"))
		require.True(t, m.Atomic())
		require.NoError(t, m.Lock(bg()))
		require.NoError(t, m.Unlock(bg()))
		ok, err := m.TryLock(bg())
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, m.Unlock(bg()))
		mu.Lock()
		defer mu.Unlock()
		want := map[string]int{"rlock {obs}:a": 2, "rlock {obs}:b": 2}
		assert.Equal(t, want, count[redisync.EventReleased], "released")
		assert.Equal(t, want, count[redisync.EventAcquired], "acquired")
	})
}

// TestLockRetriesTransientComponentErrorsWithinCtx: as every lock's own
// Lock does, a multilock's Lock retries an error that passes by itself — a
// component's server refusing connections, then back — within ctx, and
// returns a permanent one (a key of another kind) at once.
func TestLockRetriesTransientComponentErrorsWithinCtx(t *testing.T) {
	e := setup(t)
	second := redistest.Start(t)
	c2 := redisync.New(second.Client(t))
	t.Cleanup(func() { c2.Close() })
	m := New(rlock.New(e.C, "tr:a"), rlock.New(c2, "tr:b"))
	second.Kill()
	locked := make(chan error, 1)
	ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
	defer cancel()
	go func() { locked <- m.Lock(ctx) }()
	time.Sleep(500 * time.Millisecond)
	select {
	case err := <-locked:
		t.Fatalf("Lock returned %v while a component's server was down", err)
	default:
	}
	second.Restart()
	require.NoError(t, <-locked)
	require.NoError(t, m.Unlock(bg()))

	redistest.Do(t, second.Client(t), "SET", "tr:b", "a user's value")
	start := time.Now()
	err := m.Lock(ctx)
	assert.Less(t, time.Since(start), 5*time.Second, "a permanent error was retried")
	require.ErrorIs(t, err, redisync.ErrWrongKind)
	assert.Zero(t, e.DBSize(t), "nothing left held: %v", e.Keys(t))
}

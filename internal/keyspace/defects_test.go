package keyspace

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// refused reports whether an attempt was refused without being granted:
// busy, or a typed "this key is not a lock of mine".
func refused(ok bool, err error) bool {
	return !ok && (err == nil || errors.Is(err, errWrongKind))
}

// Issue 13, defect 1: a read-write lock on a name that holds a user's hash
// treated "no mode field" as free, and its release deleted (RUnlock) or
// expired (Unlock) the data.
func TestRWLockLeavesADataHashAlone(t *testing.T) {
	e := newEnv(t)
	const name = "orders:42"
	for _, ttl := range []bool{false, true} {
		e.do(t, "DEL", name)
		e.do(t, "HSET", name, "name", "Ann", "email", "ann@example.com")
		if ttl {
			e.do(t, "PEXPIRE", name, "600000")
		}
		before := e.snapshot(t)
		rw := rwlock.New(e.c, name)
		for _, side := range []struct {
			label   string
			try     func(context.Context) (bool, error)
			lock    func(context.Context) error
			release func(context.Context) error
		}{{"read", rw.TryRLock, rw.RLock, rw.RUnlock}, {"write", rw.TryLock, rw.Lock, rw.Unlock}} {
			ok, err := side.try(bg())
			assert.True(t, refused(ok, err), "ttl=%v %s: TryLock on a data hash: %v, %v", ttl, side.label, ok, err)
			if ok {
				_ = side.release(bg())
			}
			if !ttl {
				// Without an expiry it can be no lock: refused at once,
				// not waited on.
				ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
				err = side.lock(ctx)
				cancel()
				assert.ErrorIs(t, err, errWrongKind, "ttl=%v %s Lock", ttl, side.label)
				if err == nil {
					_ = side.release(bg())
				}
			}
			assert.Empty(t, diff(before, e.snapshot(t)), "ttl=%v %s: the data hash changed", ttl, side.label)
		}
	}
}

// Issue 13, defect 2: force-unlock deleted any hash.
func TestForceUnlockLeavesADataHashAlone(t *testing.T) {
	e := newEnv(t)
	const name = "customers:7"
	e.do(t, "HSET", name, "name", "Bo", "email", "bo@example.com")
	before := e.snapshot(t)
	for label, force := range map[string]func(context.Context) (bool, error){
		"rlock": rlock.New(e.c, name).ForceUnlock, "fairlock": fairlock.New(e.c, name).ForceUnlock, "rwlock": rwlock.New(e.c, name).ForceUnlock,
	} {
		deleted, err := force(bg())
		assert.False(t, deleted, label)
		assert.ErrorIs(t, err, errWrongKind, label)
		assert.Empty(t, diff(before, e.snapshot(t)), "%s: the data hash changed", label)
	}
}

// Issue 13, defect 3: kinds on one name did not exclude each other (rwlock
// got in beside an rlock, whose Unlock then failed with a Lua error).
// Every pair: while the first holds, the second is busy or refused and
// changes nothing; the first then releases cleanly.
func TestKindsOnOneNameExcludeEachOther(t *testing.T) {
	e := newEnv(t)
	other := redisync.New(dial(t))
	t.Cleanup(func() { other.Close() })
	for a := range nKinds {
		for b := range nKinds {
			name := "pair:" + a.String() + ":" + b.String()
			first, second := newHandle(e.c, a, name), newHandle(other, b, name)
			ok, err := first.try(bg())
			require.NoError(t, err, "%v alone", a)
			require.True(t, ok, "%v alone", a)
			before := e.snapshot(t)
			ok, err = second.try(bg())
			if shares(a, b) {
				assert.True(t, ok && err == nil, "%v then %v: %v, %v", a, b, ok, err)
				if ok {
					assert.NoError(t, second.release(bg()), "%v then %v: release", a, b)
				}
			} else {
				assert.True(t, refused(ok, err), "%v then %v: the second got %v, %v", a, b, ok, err)
				if ok {
					_ = second.release(bg())
				} else {
					assert.Empty(t, diff(before, e.snapshot(t)), "%v then %v: a refused attempt wrote", a, b)
				}
			}
			assert.NoError(t, first.release(bg()), "%v then %v: the first's release", a, b)
		}
	}
}

// Issue 13, defect 3: a semaphore's configuration hash (no expiry) made a
// lock of the same name wait forever.
func TestSemaphoreConfigurationIsNoLockToWaitFor(t *testing.T) {
	e := newEnv(t)
	const name = "pool"
	s := semaphore.New(e.c, name, 2)
	p, err := s.Acquire(bg(), 1)
	require.NoError(t, err)
	require.NoError(t, p.Release(bg()))
	before := e.snapshot(t)
	require.Contains(t, before, name, "the configuration stays")
	for _, k := range []kind{kRLock, kFair, kRead, kWrite, kRedlock} {
		ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
		h := newHandle(e.c, k, name)
		ok, err := h.try(ctx)
		cancel()
		assert.False(t, ok, k.String())
		assert.ErrorIs(t, err, errWrongKind, "%v on a semaphore's name", k)
		assert.Empty(t, diff(before, e.snapshot(t)), k.String())
	}
}

// Issue 13, defect 4: "x" and "{x}" shared every derived key: a fair lock
// queue (so fair locks x and {x} behaved as one) and a semaphore's pool.
func TestDistinctNamesShareNoKey(t *testing.T) {
	e := newEnv(t)
	other := redisync.New(dial(t))
	t.Cleanup(func() { other.Close() })

	held := fairlock.New(e.c, "x")
	require.NoError(t, held.Lock(bg()))
	waiter := fairlock.New(other, "x")
	ctx, cancel := context.WithCancel(bg())
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()
	require.Eventually(t, func() bool {
		q, err := held.Queue(bg())
		return err == nil && len(q) == 1
	}, 10*time.Second, 10*time.Millisecond, "waiter queued on x")
	braced := fairlock.New(e.c, "{x}")
	ok, err := braced.TryLock(bg())
	assert.NoError(t, err)
	assert.True(t, ok, "fair lock {x} is free: the waiter queues for x")
	if ok {
		require.NoError(t, braced.Unlock(bg()))
	}
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	require.NoError(t, held.Unlock(bg()))

	p, err := semaphore.New(e.c, "y", 1).Acquire(bg(), 1)
	require.NoError(t, err)
	q, ok, err := semaphore.New(e.c, "{y}", 1).TryAcquire(bg(), 1)
	assert.NoError(t, err)
	assert.True(t, ok, "semaphore {y} has its own permit")
	if ok {
		require.NoError(t, q.Release(bg()))
	}
	require.NoError(t, p.Release(bg()))
}

// Issue 13, defect 5: names equal to internal keys collided with them (an
// rlock named after semaphore s's permits co-held with s; one named after
// x's token key broke rlock x with WRONGTYPE). Such names are refused.
func TestNamesOfInternalKeysAreRefused(t *testing.T) {
	e := newEnv(t)
	p, err := semaphore.New(e.c, "s", 1).Acquire(bg(), 1)
	require.NoError(t, err)
	x := rlock.New(e.c, "x")
	require.NoError(t, x.Lock(bg()))
	before := e.snapshot(t)
	for _, name := range []string{"redisync_sem_permits:{s}", "redisync_sem_holders:{s}:s", "redisync_lock_token:{x}",
		"redisync_lock_token:{x}:x", "{x}:" + x.Owner() + ":rwlock_timeout:1"} {
		for k := range nKinds {
			h := newHandle(e.c, k, name)
			ok, err := h.try(bg())
			assert.False(t, ok, "%v %q", k, name)
			assert.ErrorIs(t, err, redisync.ErrInvalidName, "%v %q", k, name)
			if ok {
				_ = h.release(bg())
			}
		}
	}
	assert.Empty(t, diff(before, e.snapshot(t)))
	require.NoError(t, x.Unlock(bg()))
	require.NoError(t, p.Release(bg()))
}

// Issue 13, defect 7: a capacity Lua cannot hold exactly failed half-way,
// and Capacity read MaxInt64 as -2^63. Counts out of range are refused
// before any I/O, and a capacity in Redis that no semaphore of ours wrote
// is not reported as a number it is not.
func TestHugeCountsAreRefusedAndCapacityIsExact(t *testing.T) {
	e := newEnv(t)
	for _, n := range []int{1e17, math.MaxInt64} {
		s := semaphore.New(e.c, "big", n)
		_, _, err := s.TryAcquire(bg(), 1)
		assert.ErrorIs(t, err, semaphore.ErrBadCount, "capacity %d", n)
		_, _, err = semaphore.New(e.c, "big", 1).TryAcquire(bg(), n)
		assert.ErrorIs(t, err, semaphore.ErrBadCount, "count %d", n)
		assert.Zero(t, len(e.snapshot(t)), "nothing written: %s", e.describe(t))
	}
	e.do(t, "HSET", "big", "capacity", strconv.Itoa(math.MaxInt64))
	before := e.snapshot(t)
	got, err := semaphore.New(e.c, "big", 1).Capacity(bg())
	if err == nil {
		assert.Equal(t, math.MaxInt64, got, "Capacity must be exact or an error")
	}
	assert.Empty(t, diff(before, e.snapshot(t)))
}

// Redlock's key is a string; a hash under its name is not a lock of its.
func TestRedlockLeavesAHashAlone(t *testing.T) {
	e := newEnv(t)
	e.do(t, "HSET", "acct", "balance", "10")
	before := e.snapshot(t)
	ok, err := redlock.New([]*redisync.Client{e.c}, "acct").TryLock(bg())
	assert.True(t, refused(ok, err), "%v %v", ok, err)
	assert.Empty(t, diff(before, e.snapshot(t)))
}

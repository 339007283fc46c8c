package deploytest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// TestEveryOperationUnderOOMIsWholeOrRefused goes past the acquisitions
// of TestAcquiresUnderOOMFailWholeAndLeaveTheKeyspaceUnchanged: under
// maxmemory with noeviction, every other operation of every primitive
// either runs whole (releases, force unlocks, leaving a queue, deleting a
// latch: they free memory) or is refused whole with an error naming the
// primitive and the keyspace unchanged byte for byte (re-entry, a partial
// release that must grow nothing, a fair waiter joining the queue,
// SetPermits, Redlock's Lock) — and holds taken before stay renewed.
func TestEveryOperationUnderOOMIsWholeOrRefused(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	bg := context.Background()
	c := redisync.New(rc, redisync.WithWatchdogTimeout(renewedLease))
	defer c.Close()

	nested := rlock.New(c, "oomx:nested", rlock.WithReentrant())
	require.NoError(t, nested.Lock(bg))
	require.NoError(t, nested.Lock(bg))
	reader := rwlock.New(c, "oomx:rw")
	require.NoError(t, reader.RLock(bg))
	require.NoError(t, reader.RLock(bg))
	forced := []string{"oomx:force:r", "oomx:force:f", "oomx:force:rw"}
	other := redisync.New(rc, redisync.WithWatchdogTimeout(renewedLease))
	defer other.Close()
	require.NoError(t, rlock.New(other, forced[0]).Lock(bg))
	require.NoError(t, fairlock.New(other, forced[1]).Lock(bg))
	require.NoError(t, rwlock.New(other, forced[2]).Lock(bg))
	sem := semaphore.New(c, "oomx:sem", 3)
	permit, err := sem.Acquire(bg, 1)
	require.NoError(t, err)
	semForced := semaphore.New(other, "oomx:sem:force", 2)
	_, err = semForced.Acquire(bg, 2)
	require.NoError(t, err)
	countdown := latch.New(c, "oomx:latch")
	_, err = countdown.TrySetCount(bg, 2)
	require.NoError(t, err)
	rl := redlock.New([]*redisync.Client{c}, "oomx:redlock")
	require.NoError(t, rl.Lock(bg))

	// A fair waiter in the queue before the pressure: its Lock ends under
	// OOM and it must leave the queue.
	fairHolder := fairlock.New(c, "oomx:fair")
	require.NoError(t, fairHolder.Lock(bg))
	waitCtx, stopWaiting := context.WithCancel(bg)
	waited := make(chan error, 1)
	waiter := fairlock.New(other, "oomx:fair")
	go func() { waited <- waiter.Lock(waitCtx) }()
	require.Eventually(t, func() bool {
		q, err := fairHolder.Queue(bg)
		return err == nil && len(q) == 1
	}, 5*time.Second, 10*time.Millisecond, "the waiter queued")

	redistest.ExhaustMemory(t, rc)

	// Refused whole. The snapshot is taken around each call.
	for _, op := range []struct {
		what, primitive string
		do              func() error
	}{
		{"re-entry", "rlock", func() error { return nested.Lock(bg) }},
		{"read re-entry", "rwlock", func() error { return reader.RLock(bg) }},
		{"fair waiter joins", "fairlock", func() error {
			ctx, cancel := context.WithTimeout(bg, 2*time.Second)
			defer cancel()
			return fairlock.New(c, "oomx:fair").Lock(ctx)
		}},
		{"SetPermits", "semaphore", func() error { return sem.SetPermits(bg, 5) }},
		{"redlock Lock", "redlock", func() error {
			_, err := redlock.New([]*redisync.Client{c}, "oomx:redlock:new").TryLock(bg)
			return err
		}},
	} {
		before := keyspaceSnapshot(t, rc)
		err := op.do()
		require.Error(t, err, op.what)
		assert.Contains(t, err.Error(), "OOM", op.what)
		assert.True(t, strings.HasPrefix(err.Error(), op.primitive), "%s: %q names %s", op.what, err, op.primitive)
		assert.NotContains(t, err.Error(), "\n", op.what)
		assert.Equal(t, before, keyspaceSnapshot(t, rc), "%s: the keyspace changed", op.what)
	}
	n, err := nested.HoldCount(bg)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the refused re-entry added nothing")

	// The waiter's Lock ends under OOM: it leaves the queue.
	stopWaiting()
	assert.ErrorIs(t, <-waited, context.Canceled)
	// (Queue reads in a MULTI, which Redis refuses under OOM: read the
	// queue's zset here.)
	queue, _ := keys.Derived(keys.FairQueuePrefix, "oomx:fair")
	assert.Eventually(t, func() bool {
		n, err := redistest.Do(t, rc, "ZCARD", queue).AsInt64()
		return err == nil && n == 0
	}, 5*time.Second, 10*time.Millisecond, "the cancelled waiter left the queue under OOM")

	// Past a whole lease every hold taken before is still renewed.
	time.Sleep(renewedLease + 500*time.Millisecond)
	for _, l := range []redisync.Locker{nested, reader.ReadLocker(), rl, fairHolder} {
		require.NoError(t, l.Err(), "renewed under OOM")
	}
	require.NoError(t, permit.Err(), "renewed under OOM")

	// Releases run: partial ones (a decrement) and full ones.
	require.NoError(t, nested.Unlock(bg), "partial release")
	n, err = nested.HoldCount(bg)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, reader.RUnlock(bg), "partial read release")
	ok, err := reader.IsLocked(bg)
	require.NoError(t, err)
	assert.True(t, ok, "one read hold stays")
	require.NoError(t, reader.RUnlock(bg))
	require.NoError(t, nested.Unlock(bg))
	require.NoError(t, rl.Unlock(bg), "redlock release")
	require.NoError(t, fairHolder.Unlock(bg))
	require.NoError(t, permit.Release(bg))

	// Operators' tools run.
	for i, force := range []func() (bool, error){
		func() (bool, error) { return rlock.New(c, forced[0]).ForceUnlock(bg) },
		func() (bool, error) { return fairlock.New(c, forced[1]).ForceUnlock(bg) },
		func() (bool, error) { return rwlock.New(c, forced[2]).ForceUnlock(bg) },
	} {
		ok, err := force()
		require.NoError(t, err, forced[i])
		assert.True(t, ok, forced[i])
		assert.False(t, exists(t, rc, forced[i]), forced[i])
	}
	ok, err = semaphore.New(c, "oomx:sem:force", 1).ForceUnlock(bg)
	require.NoError(t, err)
	assert.True(t, ok, "oomx:sem:force")
	ok, err = countdown.Delete(bg)
	require.NoError(t, err, "latch Delete frees memory")
	assert.True(t, ok)
	for _, name := range []string{"oomx:nested", "oomx:rw", "oomx:redlock", "oomx:fair", "oomx:latch"} {
		assert.False(t, exists(t, rc, name), "%s gone", name)
	}
}

// TestLockInspectionsAnswerUnderOOM: IsLocked, HoldCount, TTL and Holders
// of rlock, fairlock and rwlock read the lock under maxmemory with
// noeviction, when an operator most needs them. (They read in one MULTI,
// and Redis refuses every command queued in a MULTI then: they answered
// "EXECABORT Transaction discarded because of previous errors".)
func TestLockInspectionsAnswerUnderOOM(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	bg := context.Background()
	c := redisync.New(rc)
	defer c.Close()
	r := rlock.New(c, "oomi:r")
	require.NoError(t, r.Lock(bg))
	f := fairlock.New(c, "oomi:f")
	require.NoError(t, f.Lock(bg))
	rw := rwlock.New(c, "oomi:rw")
	require.NoError(t, rw.RLock(bg))
	redistest.ExhaustMemory(t, rc)

	ok, err := r.IsLocked(bg)
	require.NoError(t, err)
	assert.True(t, ok)
	n, err := r.HoldCount(bg)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	ttl, err := r.TTL(bg)
	require.NoError(t, err)
	assert.Positive(t, ttl)
	hs, err := r.Holders(bg)
	require.NoError(t, err)
	assert.Len(t, hs, 1)
	n, err = f.HoldCount(bg)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	ok, err = rw.IsLocked(bg)
	require.NoError(t, err)
	assert.True(t, ok)
	hs, err = rw.Holders(bg)
	require.NoError(t, err)
	assert.Len(t, hs, 1)
	require.NoError(t, r.Unlock(bg))
	require.NoError(t, f.Unlock(bg))
	require.NoError(t, rw.RUnlock(bg))
}

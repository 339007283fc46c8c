package keyspace

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// An operator whose ACL gives read-only access to the keys (%R~*, Redis 7)
// inspects every kind: the inspections only read. They read through the
// no-writes script lock_read.lua (and latch Count through its own), and
// Redis declares the keys of EVAL and EVALSHA read-write whatever the
// script's flags, so they answered NOPERM ("No permissions to access a
// key"); EVALSHA_RO's keys are read-only. Nothing in Redis changes.
//
// Not the semaphore: its inspections are sem_state.lua, a write (it takes
// back expired holders' permits and wakes the queue's head first), so they
// need write access (docs/keys-and-permissions.md).
func TestInspectionsRunWithReadOnlyKeyAccess(t *testing.T) {
	e := newEnv(t)
	admin := e.c
	ctx := bg()

	held := rlock.New(admin, "ro:rlock", rlock.WithLease(aclLease))
	require.NoError(t, held.Lock(ctx))
	defer func() { require.NoError(t, held.Unlock(ctx)) }()
	fair := fairlock.New(admin, "ro:fair", fairlock.WithLease(aclLease))
	require.NoError(t, fair.Lock(ctx))
	defer func() { require.NoError(t, fair.Unlock(ctx)) }()
	// A waiter in the fair queue, so that Queue has something to list.
	waiter := fairlock.New(admin, "ro:fair", fairlock.WithLease(aclLease))
	wctx, cancel := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() { waited <- waiter.Lock(wctx) }()
	defer func() { cancel(); <-waited }()
	require.Eventually(t, func() bool {
		q, err := fair.Queue(ctx)
		return err == nil && len(q) == 1
	}, 10*time.Second, 20*time.Millisecond, "setup: the waiter queues")
	rw := rwlock.New(admin, "ro:rw", rwlock.WithLease(aclLease))
	require.NoError(t, rw.RLock(ctx))
	defer func() { require.NoError(t, rw.RUnlock(ctx)) }()
	red := redlock.New([]*redisync.Client{admin}, "ro:red", redlock.WithLease(aclLease))
	require.NoError(t, red.Lock(ctx))
	defer func() { require.NoError(t, red.Unlock(ctx)) }()
	ok, err := latch.New(admin, "ro:latch").TrySetCount(ctx, 4)
	require.NoError(t, err)
	require.True(t, ok)

	e.do(t, "ACL", "SETUSER", "viewer", "reset", "on", ">pw", "%R~*", "&*", "+@all")
	t.Cleanup(func() { e.do(t, "ACL", "DELUSER", "viewer") })
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Username: "viewer", Password: "pw",
		DisableCache: true, ForceSingleClient: true})
	require.NoError(t, err)
	defer rc.Close()
	viewer := redisync.New(rc)
	defer viewer.Close()

	before := e.snapshot(t)
	count := func(f func(context.Context) ([]redisync.Holder, error)) func(context.Context) (int, error) {
		return func(ctx context.Context) (int, error) { hs, err := f(ctx); return len(hs), err }
	}
	vr, vf, vrw := rlock.New(viewer, "ro:rlock"), fairlock.New(viewer, "ro:fair"), rwlock.New(viewer, "ro:rw")
	vred := redlock.New([]*redisync.Client{viewer}, "ro:red")
	for _, k := range []struct {
		kind string
		i    interface {
			IsLocked(context.Context) (bool, error)
			HoldCount(context.Context) (int, error)
			TTL(context.Context) (time.Duration, error)
		}
		holders func(context.Context) (int, error)
	}{
		{"rlock", vr, count(vr.Holders)},
		{"fairlock", vf, count(vf.Holders)},
		{"rwlock", vrw, count(vrw.Holders)},
		{"redlock", vred, count(vred.Holders)},
	} {
		locked, err := k.i.IsLocked(ctx)
		require.NoError(t, err, "%s IsLocked", k.kind)
		assert.True(t, locked, "%s IsLocked", k.kind)
		_, err = k.i.HoldCount(ctx)
		require.NoError(t, err, "%s HoldCount", k.kind)
		ttl, err := k.i.TTL(ctx)
		require.NoError(t, err, "%s TTL", k.kind)
		assert.Greater(t, ttl, time.Duration(0), "%s TTL", k.kind)
		hs, err := k.holders(ctx)
		require.NoError(t, err, "%s Holders", k.kind)
		assert.Equal(t, 1, hs, "%s Holders", k.kind)
	}
	q, err := fairlock.New(viewer, "ro:fair").Queue(ctx)
	require.NoError(t, err, "fairlock Queue")
	assert.Equal(t, []string{waiter.Owner()}, q)
	n, err := latch.New(viewer, "ro:latch").Count(ctx)
	require.NoError(t, err, "latch Count")
	assert.Equal(t, int64(4), n)
	assert.Empty(t, diff(before, e.snapshot(t)), "an inspection changed Redis")
}

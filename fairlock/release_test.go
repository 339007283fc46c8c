package fairlock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
)

// Issue 12, defect 2, for the fair lock: Unlock with an ended ctx still
// releases, and the next waiter in the queue gets in.
func TestFairUnlockWithAnEndedContextStillReleases(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(900*time.Millisecond))
	const name = "fair:unlock-ctx"
	m := New(e.C, name)
	require.NoError(t, m.Lock(bg()))
	ctx, cancel := context.WithCancel(bg())
	cancel()
	err := m.Unlock(ctx)
	assert.True(t, err == nil || err == context.Canceled, "got %v", err)
	select {
	case <-m.Done():
	default:
		t.Fatal("the hold did not end locally at once")
	}
	other := New(e.Client(t), name)
	wctx, wcancel := context.WithTimeout(bg(), 5*time.Second)
	defer wcancel()
	require.NoError(t, other.Lock(wctx))
	require.NoError(t, other.Unlock(bg()))
	e.WaitEmpty(t)
}

// Issue 12, defect 5, for the fair lock: handles sharing an owner id each
// release their own hold.
func TestFairSharedOwnerHandlesEachReleaseTheirOwnHold(t *testing.T) {
	e := setup(t)
	const name = "fair:shared-owner"
	a := New(e.C, name, WithOwner("svc:2"))
	b := New(e.C, name, WithOwner("svc:2"))
	require.NoError(t, a.Lock(bg()))
	require.NoError(t, b.Lock(bg()))
	require.NoError(t, a.Unlock(bg()))
	assert.NoError(t, b.Err())
	require.NoError(t, b.Unlock(bg()))
	e.WaitEmpty(t)
}

// A fair lock's release leaves a hash that a Redisson RReadWriteLock
// reader joined (it takes a hash without "mode" for free and writes "mode"
// and its read count): that hash is a read-write lock's now. On a Client
// without holder info (the release's common path) as on one with it, with
// either queue.
func TestFairReleaseLeavesAHashARedissonReaderJoined(t *testing.T) {
	const name, reader = "fair-joined", "9a3c1f0e-1d2b-4c5d-8e7f-0a1b2c3d4e5f:7"
	for _, info := range []bool{false, true} {
		for _, redisson := range []bool{false, true} {
			e := setup(t, redisync.WithHolderInfo(info))
			what := fmt.Sprintf("holder info %v, Redisson queue %v", info, redisson)
			opts := []Option{WithLease(time.Minute)}
			if redisson {
				opts = append(opts, WithRedissonQueue(0))
			}
			m := New(e.C, name, opts...)
			require.NoError(t, m.Lock(bg()), what)
			e.Do(t, "HSET", name, "mode", "read", reader, "1")
			e.Do(t, "SET", "{"+name+"}:"+reader+":rwlock_timeout:1", "1", "PX", "60000")
			before, err := e.Do(t, "HGETALL", name).AsStrMap()
			require.NoError(t, err)
			err = m.Unlock(bg())
			after, _ := e.Do(t, "HGETALL", name).AsStrMap()
			assert.Equal(t, before, after, "%s: the release (Unlock: %v) left the hash as it was", what, err)
		}
	}
}

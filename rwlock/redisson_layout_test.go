package rwlock

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/locktest"
)

// Issue 16: the token lives in the phase key, never in the hash, so
// Redisson's scripts see exactly their own layout.

// TestHashHoldsOnlyRedissonFields: read and write holds leave nothing in the
// hash but "mode" and hold counts; the token is in the phase key.
func TestHashHoldsOnlyRedissonFields(t *testing.T) {
	e := setup(t)
	const name = "rw:fields"
	phase := "redisync_rwlock_token:{" + name + "}:" + name
	rw := New(e.C, name)
	require.NoError(t, rw.Lock(bg()))
	assert.Equal(t, map[string]string{"mode": "write", rw.Owner() + ":write": "1"}, hash(t, e, name))
	v, err := e.Do(t, "GET", phase).ToString()
	require.NoError(t, err)
	assert.Regexp(t, `^\d+ w `+rw.Owner()+`:write$`, v)
	require.NoError(t, rw.Unlock(bg()))

	require.NoError(t, rw.RLock(bg()))
	assert.Equal(t, map[string]string{"mode": "read", rw.Owner(): "1"}, hash(t, e, name))
	require.NoError(t, rw.RUnlock(bg()))
	e.WaitEmpty(t)
}

// TestRedissonWriteReleaseOfSharedOwnerFreesTheLock (issue 16 item 1): a
// Redisson client sharing the owner id releases redisync's write hold; its
// script deletes the hash only when "mode" is the last field, so any field
// of ours left it read-locked for the whole lease.
func TestRedissonWriteReleaseOfSharedOwnerFreesTheLock(t *testing.T) {
	e := setup(t)
	const name = "rw:shared-release"
	java := javaClient{t: t, e: e, name: name, owner: "9a3c1f0e-1d2b-4c5d-8e7f-0a1b2c3d4e5f:9"}
	rw := New(e.C, name, WithOwner(java.owner))
	require.NoError(t, rw.Lock(bg()))
	java.writeUnlock()
	assert.False(t, e.Exists(t, name), "Redisson's release of the last write hold must delete the lock")
	other := javaClient{t: t, e: e, name: name, owner: "9a3c1f0e-1d2b-4c5d-8e7f-0a1b2c3d4e5f:10"}
	require.True(t, other.writeLock(), "another writer is locked out")
	other.writeUnlock()
}

// TestReenterRedissonWriteHoldGetsToken (issue 16 item 4): re-entering a
// write hold a Redisson client began gives a fresh fencing token, above
// every token issued before, and every later re-entry keeps it.
func TestReenterRedissonWriteHoldGetsToken(t *testing.T) {
	e := setup(t)
	const name = "rw:reenter-token"
	first := New(e.C, name)
	require.NoError(t, first.Lock(bg()))
	before := first.WriteLocker().Token()
	require.NoError(t, first.Unlock(bg()))

	java := javaClient{t: t, e: e, name: name, owner: "9a3c1f0e-1d2b-4c5d-8e7f-0a1b2c3d4e5f:11"}
	require.True(t, java.writeLock())
	rw := New(e.C, name, WithOwner(java.owner))
	require.NoError(t, rw.Lock(bg()))
	tok := rw.WriteLocker().Token()
	assert.Greater(t, tok, before)
	again := New(e.C, name, WithOwner(java.owner))
	require.NoError(t, again.Lock(bg()))
	assert.Equal(t, tok, again.WriteLocker().Token(), "a re-entry keeps the hold's token")
	require.NoError(t, again.Unlock(bg()))
	require.NoError(t, rw.Unlock(bg()))
	java.writeUnlock()
	onlyPhaseLeft(t, e, name)
}

// onlyPhaseLeft asserts that nothing but name's phase key (and its
// holder-info hash) is left, with an expiry within the lease: a Redisson
// release that ends a phase redisync began cannot delete the phase key or
// the records of redisync's holds in it (it does not know them), which then
// expire by themselves.
func onlyPhaseLeft(t *testing.T, e *locktest.Env, name string) {
	t.Helper()
	phase := "redisync_rwlock_token:{" + name + "}:" + name
	info := "redisync_holder_info:{" + name + "}:" + name
	for _, k := range e.Keys(t) {
		if k == info {
			pttl := e.PTTL(t, k)
			assert.True(t, pttl > 0 && pttl <= 30000, "holder-info pttl %d", pttl)
			continue
		}
		require.Equal(t, phase, k, "only the phase key may be left: %s", e.Describe(t))
		pttl := e.PTTL(t, k)
		assert.True(t, pttl > 0 && pttl <= 30000, "phase key pttl %d", pttl)
	}
}

// TestOldLayoutHashIsReleased: a hash left by the layout before issue 16
// ("redisync:token" inside) is still read and released: its token is the
// hold's, and the last release deletes it.
func TestOldLayoutHashIsReleased(t *testing.T) {
	e := setup(t)
	t.Run("write", func(t *testing.T) {
		const name, owner = "rw:old-write", "old-process:1"
		e.Do(t, "HSET", name, "mode", "write", owner+":write", "1", "redisync:token", "t123")
		e.Do(t, "PEXPIRE", name, "30000")
		rw := New(e.C, name, WithOwner(owner))
		require.NoError(t, rw.Lock(bg()))
		assert.Equal(t, uint64(123), rw.WriteLocker().Token(), "the old hold's token")
		java := javaClient{t: t, e: e, name: name, owner: owner}
		java.writeUnlock() // the old hold goes (count 2 -> 1)
		require.NoError(t, rw.Unlock(bg()))
		assert.False(t, e.Exists(t, name), "the last release deletes the old-layout hash")
		next := New(e.C, name)
		require.NoError(t, next.Lock(bg()))
		assert.Greater(t, next.WriteLocker().Token(), uint64(123))
		require.NoError(t, next.Unlock(bg()))
		e.WaitEmpty(t)
	})
	t.Run("read", func(t *testing.T) {
		const name, owner = "rw:old-read", "old-process:2"
		e.Do(t, "HSET", name, "mode", "read", owner, "1", "redisync:token", "t77")
		e.Do(t, "PEXPIRE", name, "30000")
		e.Do(t, "SET", "{"+name+"}:"+owner+":rwlock_timeout:1", "1", "PX", "30000")
		rw := New(e.C, name)
		require.NoError(t, rw.RLock(bg()))
		assert.Equal(t, uint64(77), rw.ReadLocker().Token(), "a reader joins the old read phase")
		// The old process releases its hold with its own (old) script: the
		// count and its timeout key go.
		e.Do(t, "HDEL", name, owner)
		e.Do(t, "DEL", "{"+name+"}:"+owner+":rwlock_timeout:1")
		require.NoError(t, rw.RUnlock(bg()))
		assert.False(t, e.Exists(t, name), "the last reader's release deletes the old-layout hash")
		e.WaitEmpty(t)
	})
}

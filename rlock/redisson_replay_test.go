package rlock

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
)

// Replays of Redisson 4.7.0's RLock scripts for the races the real client
// cannot be made to hit on cue (issue 16): its batched renewal arriving after
// a release, and its unlock landing between two renewals of ours. The
// scripts are written from the ones in the redisson-4.7.0 jar
// (org.redisson.renewal.LockTask, RedissonLock.unlockInnerAsync), with the
// same KEYS and ARGV; redissonAcquire (faults_test.go) is its lock script.

// redissonRenewBatch is LockTask's renewal of many holds at once: for each
// hash that still has the owner's field, PEXPIRE it to the lease; 1 or 0 per
// hold. KEYS: the lock hashes; ARGV[1]: lease ms, ARGV[i+1]: owner of hold i.
const redissonRenewBatch = `local result = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    table.insert(result, 1)
  else
    table.insert(result, 0)
  end
end
return result`

// redissonUnlock is RLock's unlock with its unlock latch: a request already
// answered returns the latched answer; otherwise one hold of the owner goes,
// and the last one deletes the hash and publishes. KEYS: hash, channel,
// latch "redisson_unlock_latch:{N}:<request id>"; ARGV: message "0", lease
// ms, owner, "publish", latch ttl ms. Reply: nil (not held), 0 (still held),
// 1 (released).
const redissonUnlock = `local val = redis.call('get', KEYS[3])
if val ~= false then return tonumber(val) end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1`

// javaOwner is a Redisson owner id: its client's UUID and a thread id.
func javaOwner(thread int) string {
	return "6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0:" + strconv.Itoa(thread)
}

// TestRedissonRenewalAfterOurReleaseRevivesNothing: a Redisson renewal batch
// that was in flight while its owner's hold ended (its own unlock, then the
// last hold of a redisync handle sharing the owner) finds nothing to renew:
// it creates no key and leaves the next holder's lease and fields alone; a
// retried Redisson unlock is answered by its latch without touching the next
// hold.
func TestRedissonRenewalAfterOurReleaseRevivesNothing(t *testing.T) {
	e := setup(t)
	const name, still = "replay:renew-after-release", "replay:renew-still-held"
	j, other := javaOwner(1), javaOwner(2)
	renew := func(owners ...string) []int64 {
		t.Helper()
		args := []string{"EVAL", redissonRenewBatch, strconv.Itoa(len(owners))}
		keys := []string{name, still}[:len(owners)]
		args = append(append(append(args, keys...), "30000"), owners...)
		got, err := e.Do(t, args...).AsIntSlice()
		require.NoError(t, err)
		return got
	}
	unlock := func(owner, request string) (int64, bool) {
		t.Helper()
		res := e.Do(t, "EVAL", redissonUnlock, "3", name, "redisson_lock__channel:{"+name+"}",
			"redisson_unlock_latch:{"+name+"}:"+request, "0", "30000", owner, "publish", "10000")
		if rueidisNil(res.Error()) {
			return 0, false
		}
		n, err := res.AsInt64()
		require.NoError(t, err)
		return n, true
	}

	// Redisson's thread holds both names; a redisync handle with its owner
	// id re-enters the first.
	require.True(t, rueidisNil(e.Do(t, "EVAL", redissonAcquire, "1", name, "30000", j).Error()))
	require.True(t, rueidisNil(e.Do(t, "EVAL", redissonAcquire, "1", still, "30000", other).Error()))
	mu := New(e.C, name, WithOwner(j))
	require.NoError(t, mu.Lock(bg()))
	require.NotZero(t, mu.Token())
	n, ok := unlock(j, "r1")
	require.True(t, ok)
	require.Equal(t, int64(0), n, "Redisson's unlock takes one of two holds")
	require.NoError(t, mu.Unlock(bg()))
	require.False(t, e.Exists(t, name), "the last hold deleted the hash: %s", e.Describe(t))

	// The renewal that was in flight arrives.
	assert.Equal(t, []int64{0, 1}, renew(j, other), "only the hold still held is renewed")
	assert.False(t, e.Exists(t, name), "a late renewal brings nothing back: %s", e.Describe(t))

	// Another owner holds now, on a short fixed lease.
	const lease = 2 * time.Second
	next := New(e.C, name, WithLease(lease))
	require.NoError(t, next.Lock(bg()))
	want := map[string]string{next.Owner(): "1", "redisync:token": strconv.FormatUint(next.Token(), 10)}
	assert.Equal(t, []int64{0}, renew(j), "the late renewal is not the new holder's")
	n, ok = unlock(j, "r1")
	assert.True(t, ok)
	assert.Equal(t, int64(0), n, "a retried unlock is answered by Redisson's latch")
	_, ok = unlock(j, "r2")
	assert.False(t, ok, "a new unlock by the old owner finds nothing of its own")
	fields, err := e.Do(t, "HGETALL", name).AsStrMap()
	require.NoError(t, err)
	assert.Equal(t, want, fields, "the new hold's fields are untouched")
	assert.LessOrEqual(t, e.PTTL(t, name), lease.Milliseconds(), "the new hold's lease was not extended to Redisson's")
	require.NoError(t, next.Unlock(bg()))
	assert.Equal(t, []int64{0}, renew(j))
	assert.False(t, e.Exists(t, name))
	e.Do(t, "DEL", still)
}

// TestRedissonUnlockBetweenOurRenewalsIsALoss: a redisync hold of a shared
// owner, ended by Redisson's unlocks between two of our renewals and taken
// again by that Redisson thread, is reported lost at our next renewal. Our
// renewal does not extend Redisson's new hold (it carries no token of ours),
// our Unlock does not take Redisson's count, and another hold renewed in the
// same batch stays held.
func TestRedissonUnlockBetweenOurRenewalsIsALoss(t *testing.T) {
	// Renewals every 500 ms; the loss must be seen by the deadline (before
	// the 1.5 s lease could run out), which the assertion waits for with
	// room for a loaded machine.
	e := setup(t, redisync.WithWatchdogTimeout(1500*time.Millisecond))
	const name, beside = "replay:unlock-between", "replay:unlock-beside"
	j := javaOwner(3)
	const javaLease = "60000"
	require.True(t, rueidisNil(e.Do(t, "EVAL", redissonAcquire, "1", name, javaLease, j).Error()))
	mu := New(e.C, name, WithOwner(j))
	require.NoError(t, mu.Lock(bg()))
	other := New(e.C, beside) // renewed in the same batches
	require.NoError(t, other.Lock(bg()))

	for i, req := range []string{"u1", "u2"} {
		res := e.Do(t, "EVAL", redissonUnlock, "3", name, "redisson_lock__channel:{"+name+"}",
			"redisson_unlock_latch:{"+name+"}:"+req, "0", javaLease, j, "publish", "10000")
		require.NoError(t, res.Error(), "unlock %d", i+1)
	}
	require.False(t, e.Exists(t, name), "two unlocks of the shared owner end both holds")
	require.True(t, rueidisNil(e.Do(t, "EVAL", redissonAcquire, "1", name, javaLease, j).Error()))

	select {
	case <-mu.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("the hold Redisson ended is not reported lost: %s", e.Describe(t))
	}
	assert.True(t, errors.Is(mu.Err(), redisync.ErrLockLost), "Err = %v", mu.Err())
	time.Sleep(700 * time.Millisecond) // past another renewal round
	fields, err := e.Do(t, "HGETALL", name).AsStrMap()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{j: "1"}, fields, "Redisson's new hold is exactly Redisson's")
	assert.Greater(t, e.PTTL(t, name), int64(30000), "our renewal never touched Redisson's 60 s lease")
	err = mu.Unlock(bg())
	assert.True(t, errors.Is(err, redisync.ErrLockLost) || errors.Is(err, redisync.ErrNotHeld), "Unlock after the loss = %v", err)
	fields, err = e.Do(t, "HGETALL", name).AsStrMap()
	require.NoError(t, err)
	assert.Equal(t, "1", fields[j], "our Unlock after the loss does not take Redisson's hold: %v", fields)
	for f := range fields {
		// The handle's latch field may record the refused release (it goes
		// with the hash; Redisson's RLock scripts never read other fields).
		assert.True(t, f == j || strings.HasPrefix(f, "redisync:latch:"), "field %q in Redisson's hold", f)
	}
	assert.NoError(t, other.Err(), "the other hold of the batch is still held")
	require.NoError(t, other.Unlock(bg()))
	e.Do(t, "DEL", name)
}

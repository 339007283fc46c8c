package rwlock

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
)

// Replays of Redisson 4.7.0's RReadWriteLock renewals for the races the real
// client cannot be made to hit on cue (issue 16): a renewal arriving after
// the hold it renews ended, and a Redisson release landing between two
// renewals of ours. Written from the scripts in the redisson-4.7.0 jar
// (org.redisson.renewal.ReadLockTask; a write hold is renewed by LockTask
// with the field "<owner>:write"), with the same KEYS and ARGV. javaClient
// (redisson_test.go) plays the acquire and release scripts.

// redissonReadRenewBatch is ReadLockTask's renewal: per lock, KEYS[i] the
// hash and KEYS[i+1] the read-hold base ("{N}"); ARGV[1] the lease, then per
// lock the number of owners and the owners. For every owner with a read
// count it extends that many read-hold keys; the hash only when one of them
// had a count. 1 or 0 per lock.
const redissonReadRenewBatch = `local result = {}
local arg = 2
for i = 1, #KEYS, 2 do
  local alive = false
  local owners = tonumber(ARGV[arg])
  arg = arg + 1
  for k = 1, owners do
    local counter = redis.call('hget', KEYS[i], ARGV[arg])
    if counter ~= false then
      alive = true
      for c = counter, 1, -1 do
        redis.call('pexpire', KEYS[i + 1] .. ':' .. ARGV[arg] .. ':rwlock_timeout:' .. c, ARGV[1])
      end
    end
    arg = arg + 1
  end
  if alive then
    redis.call('pexpire', KEYS[i], ARGV[1])
    table.insert(result, 1)
  else
    table.insert(result, 0)
  end
end
return result`

// redissonWriteRenew is LockTask's renewal of one write hold. KEYS: the
// hash; ARGV: lease, "<owner>:write".
const redissonWriteRenew = `if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0`

func (j javaClient) renewRead() int64 {
	j.t.Helper()
	got, err := j.eval(redissonReadRenewBatch, []string{j.name, j.base()}, "30000", "1", j.owner).AsIntSlice()
	require.NoError(j.t, err)
	require.Len(j.t, got, 1)
	return got[0]
}

func (j javaClient) renewWrite() int64 {
	j.t.Helper()
	n, err := j.eval(redissonWriteRenew, []string{j.name}, "30000", j.owner+":write").AsInt64()
	require.NoError(j.t, err)
	return n
}

// readHoldKeys lists the read-hold keys of name, whoever's.
func readHoldKeys(t *testing.T, keys []string) []string {
	var out []string
	for _, k := range keys {
		if strings.Contains(k, ":rwlock_timeout:") {
			out = append(out, k)
		}
	}
	return out
}

// TestRedissonLateRenewalsReviveNothing: Redisson renewals that were in
// flight while their holds ended find nothing to renew: no hash, no
// read-hold key comes back, and the holds taken since keep their own leases
// and fields.
func TestRedissonLateRenewalsReviveNothing(t *testing.T) {
	e := setup(t)
	const name = "rw:replay-late"
	const lease = 2 * time.Second
	reader := javaClient{t: t, e: e, name: name, owner: "6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0:21"}
	writer := javaClient{t: t, e: e, name: name, owner: "6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0:22"}

	// A Redisson reader and ours; Redisson's reader leaves, its renewal
	// arrives after.
	require.True(t, reader.readLock())
	rw := New(e.C, name, WithLease(lease))
	require.NoError(t, rw.RLock(bg()))
	reader.readUnlock()
	assert.Equal(t, int64(0), reader.renewRead(), "a renewal of a read hold that ended")
	assert.Equal(t, map[string]string{"mode": "read", rw.Owner(): "1"}, hash(t, e, name))
	assert.Equal(t, []string{"{" + name + "}:" + rw.Owner() + ":rwlock_timeout:1"}, readHoldKeys(t, e.Keys(t)),
		"the ended hold's read-hold key stays gone")
	assert.LessOrEqual(t, e.PTTL(t, name), lease.Milliseconds(), "our reader's lease was not extended to Redisson's")
	require.NoError(t, rw.RUnlock(bg()))
	assert.Equal(t, int64(0), reader.renewRead())
	assert.False(t, e.Exists(t, name), "no hash brought back: %s", e.Describe(t))

	// A Redisson writer ends, ours writes; both late renewals find nothing.
	require.True(t, writer.writeLock())
	writer.writeUnlock()
	w := New(e.C, name, WithLease(lease))
	require.NoError(t, w.Lock(bg()))
	assert.Equal(t, int64(0), writer.renewWrite(), "a renewal of a write hold that ended")
	assert.Equal(t, int64(0), reader.renewRead(), "a renewal of a read hold that ended")
	assert.Equal(t, map[string]string{"mode": "write", w.Owner() + ":write": "1"}, hash(t, e, name))
	assert.LessOrEqual(t, e.PTTL(t, name), lease.Milliseconds(), "our writer's lease was not extended to Redisson's")
	assert.Empty(t, readHoldKeys(t, e.Keys(t)))
	require.NoError(t, w.Unlock(bg()))
	assert.Equal(t, int64(0), writer.renewWrite())
	assert.False(t, e.Exists(t, name))
}

// TestRedissonReleaseBetweenOurRenewals: a Redisson release between two of
// our renewals. A Redisson reader's release leaves our reader held and
// renewed. A Redisson write release of our write hold (shared owner id)
// ends it: our next renewal reports the loss, and neither it nor our Unlock
// touches the write hold another Redisson thread took meanwhile.
func TestRedissonReleaseBetweenOurRenewals(t *testing.T) {
	// Renewals every 500 ms; the loss must be seen before the 1.5 s lease
	// could run out, which the assertion waits for with room for a loaded
	// machine.
	e := setup(t, redisync.WithWatchdogTimeout(1500*time.Millisecond))
	const name = "rw:replay-between"
	const javaLease = 60000
	java := javaClient{t: t, e: e, name: name, owner: "6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0:23"}

	require.True(t, java.readLock())
	rw := New(e.C, name)
	require.NoError(t, rw.RLock(bg()))
	java.readUnlock()
	time.Sleep(1200 * time.Millisecond) // two of our renewal rounds
	require.NoError(t, rw.ReadLocker().Err(), "our reader is still held")
	assert.Equal(t, map[string]string{"mode": "read", rw.Owner(): "1"}, hash(t, e, name))
	assert.False(t, java.writeLock(), "a Redisson writer is still kept out")
	require.NoError(t, rw.RUnlock(bg()))

	shared := New(e.C, name, WithOwner(java.owner))
	require.NoError(t, shared.Lock(bg()))
	java.writeUnlock() // Redisson's release of the shared owner's hold
	require.False(t, e.Exists(t, name), "Redisson's write release freed the lock")
	other := javaClient{t: t, e: e, name: name, owner: "6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0:24"}
	require.True(t, rueidis.IsRedisNil(other.eval(javaWriteAcquire, []string{name}, strconv.Itoa(javaLease), other.owner+":write").Error()))
	select {
	case <-shared.WriteLocker().Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("the write hold Redisson released is not reported lost: %s", e.Describe(t))
	}
	assert.True(t, errors.Is(shared.WriteLocker().Err(), redisync.ErrLockLost), "Err = %v", shared.WriteLocker().Err())
	time.Sleep(700 * time.Millisecond) // past another renewal round
	err := shared.Unlock(bg())
	assert.True(t, errors.Is(err, redisync.ErrLockLost) || errors.Is(err, redisync.ErrNotHeld), "Unlock after the loss = %v", err)
	assert.Equal(t, map[string]string{"mode": "write", other.owner + ":write": "1"}, hash(t, e, name),
		"the other Redisson writer's hold is exactly Redisson's")
	assert.Greater(t, e.PTTL(t, name), int64(30000), "our renewal never touched Redisson's 60 s lease")
	other.writeUnlock()
	assert.False(t, e.Exists(t, name))
}

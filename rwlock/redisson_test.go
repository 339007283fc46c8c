package rwlock

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
)

// The scripts below play a Redisson RReadWriteLock client, written from the
// layout described in ../shared/reference/redisson.md §2.3: a hash with
// "mode", "<owner>" read counts and "<owner>:write" write counts, one
// "{name}:<owner>:rwlock_timeout:<n>" key per read hold, and the channel
// "redisson_rwlock:{name}". They return nil when granted, the PTTL when busy.

// KEYS: name, "{name}:<owner>:rwlock_timeout"; ARGV: lease, owner, owner:write.
const javaReadAcquire = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', ARGV[1])
  redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
  return nil
end
return redis.call('pttl', KEYS[1])`

// KEYS: name, channel, "{name}:<owner>:rwlock_timeout", "{name}"; ARGV: owner.
// Every numeric field of the hash is taken for a read count.
const javaReadRelease = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('publish', KEYS[2], '0')
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if counter == 0 then
  redis.call('hdel', KEYS[1], ARGV[1])
end
redis.call('del', KEYS[3] .. ':' .. (counter + 1))
if redis.call('hlen', KEYS[1]) > 1 then
  local longest = -3
  for _, key in ipairs(redis.call('hkeys', KEYS[1])) do
    local n = tonumber(redis.call('hget', KEYS[1], key))
    if type(n) == 'number' then
      for i = n, 1, -1 do
        longest = math.max(redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i), longest)
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', KEYS[1], longest)
    return 0
  end
  if mode == 'write' then
    return 0
  end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], '0')
return 1`

// KEYS: name; ARGV: lease, owner:write.
const javaWriteAcquire = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`

// KEYS: name, channel; ARGV: owner:write.
const javaWriteRelease = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('publish', KEYS[2], '1')
  return 1
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return nil
end
if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then
  return 0
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], '1')
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
return 1`

type javaClient struct {
	t     *testing.T
	e     *locktest.Env
	name  string
	owner string
}

func (j javaClient) eval(script string, keys []string, args ...string) rueidis.RedisResult {
	j.t.Helper()
	cmd := append([]string{"EVAL", script, strconv.Itoa(len(keys))}, keys...)
	return j.e.Do(j.t, append(cmd, args...)...)
}

// base is Redisson's suffixName base: the name when it contains '{', else
// the name in braces; channel is its prefixName of "redisson_rwlock".
func (j javaClient) base() string {
	if strings.Contains(j.name, "{") {
		return j.name
	}
	return "{" + j.name + "}"
}

func (j javaClient) channel() string {
	if strings.Contains(j.name, "{") {
		return "redisson_rwlock:" + j.name
	}
	return "redisson_rwlock:{" + j.name + "}"
}

func (j javaClient) timeouts() string { return j.base() + ":" + j.owner + ":rwlock_timeout" }

func (j javaClient) readLock() bool {
	j.t.Helper()
	return rueidis.IsRedisNil(j.eval(javaReadAcquire, []string{j.name, j.timeouts()}, "30000", j.owner, j.owner+":write").Error())
}

func (j javaClient) readUnlock() {
	j.t.Helper()
	res := j.eval(javaReadRelease, []string{j.name, j.channel(), j.timeouts(), j.base()}, j.owner)
	require.NoError(j.t, res.Error())
}

func (j javaClient) writeLock() bool {
	j.t.Helper()
	return rueidis.IsRedisNil(j.eval(javaWriteAcquire, []string{j.name}, "30000", j.owner+":write").Error())
}

func (j javaClient) writeUnlock() {
	j.t.Helper()
	require.NoError(j.t, j.eval(javaWriteRelease, []string{j.name, j.channel()}, j.owner+":write").Error())
}

func TestRedissonReadWriteClientAndRedisyncExcludeEachOther(t *testing.T) {
	e := setup(t, redisync.WithMaxPoll(30*time.Second))
	const name = "rw:interop"
	java := javaClient{t: t, e: e, name: name, owner: "9a3c1f0e-1d2b-4c5d-8e7f-0a1b2c3d4e5f:7"}
	rw := New(e.C, name)
	try := func(f func() (bool, error)) bool {
		t.Helper()
		ok, err := f()
		require.NoError(t, err)
		return ok
	}
	tryRead := func() bool { return try(func() (bool, error) { return rw.TryRLock(bg()) }) }
	tryWrite := func() bool { return try(func() (bool, error) { return rw.TryLock(bg()) }) }

	// Java writes: redisync can neither read nor write, and its waiting
	// writer is woken by Java's release.
	require.True(t, java.writeLock())
	assert.False(t, tryRead())
	assert.False(t, tryWrite())
	got := make(chan error, 1)
	go func() { got <- rw.Lock(bg()) }()
	e.WaitSubscribed(t, "redisson_rwlock:{"+name+"}")
	java.writeUnlock()
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("redisync writer not woken by Redisson's write release")
	}

	// redisync writes: Java can neither read nor write, and hears the release.
	assert.False(t, java.readLock())
	assert.False(t, java.writeLock())
	msgs := e.Subscribe(t, "redisson_rwlock:{"+name+"}", false)
	require.NoError(t, rw.Unlock(bg()))
	select {
	case m := <-msgs:
		assert.Equal(t, "1", m)
	case <-time.After(5 * time.Second):
		t.Fatal("Redisson waiter not woken by redisync's release")
	}

	// Java reads: redisync reads along, nobody writes.
	require.True(t, java.readLock())
	assert.True(t, tryRead())
	assert.False(t, java.writeLock())
	other := New(e.C, name)
	assert.False(t, try(func() (bool, error) { return other.TryLock(bg()) }))
	java.readUnlock()
	assert.True(t, e.Exists(t, name), "redisync's read hold keeps the lock")
	assert.False(t, java.writeLock())
	require.NoError(t, rw.RUnlock(bg()))
	assert.False(t, e.Exists(t, name))

	// redisync reads first, Java joins; Redisson's release script, which
	// reads every numeric field as a read count, copes with the token field.
	require.True(t, tryRead())
	require.True(t, java.readLock())
	require.NoError(t, rw.RUnlock(bg()))
	assert.Equal(t, "read", hash(t, e, name)["mode"], "Java still reads")
	assert.False(t, tryWrite())
	java.readUnlock()
	assert.False(t, e.Exists(t, name), "Redisson's last read release deletes the lock")
	require.True(t, java.writeLock())
	java.writeUnlock()
	// Redisson's releases ended the read phase redisync's reader began.
	onlyPhaseLeft(t, e, name)
}

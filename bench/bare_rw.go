package main

import (
	"context"
	"errors"

	"github.com/redis/rueidis"
)

// The read-write lock's references: scripts that mirror the commands
// Redisson's RedissonReadLock and RedissonWriteLock send (acquire, release,
// and the read lock's renewal), written here from their behaviour, with no
// library logic around them. A read hold is the hash's "mode" and the
// reader's count field, plus one timeout key per hold
// ("{name}:<owner>:rwlock_timeout:<n>") with its own lease; a read
// release walks every reader's timeout keys to find the longest lease
// left; a read renewal extends the hash and every reader's timeout keys.
// A write hold is "mode" = "write" and "<owner>:write"; its renewal is
// Redisson's RLock renewal, HEXISTS + PEXPIRE: the bare renewal (d).
const (
	// KEYS: hash, this owner's timeout prefix. ARGV: lease, read field,
	// write field.
	bareReadAcquireSrc = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1)
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local hold = KEYS[2] .. ':' .. n
  redis.call('set', hold, 1)
  redis.call('pexpire', hold, ARGV[1])
  local left = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(left, ARGV[1]))
  return nil
end
return redis.call('pttl', KEYS[1])`
	// KEYS: hash, channel, this owner's timeout prefix, the name's
	// timeout base "{name}". ARGV: message, read field.
	bareReadReleaseSrc = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return nil
end
local n = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if n == 0 then
  redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (n + 1))
if redis.call('hlen', KEYS[1]) > 1 then
  local longest = -3
  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    local count = tonumber(redis.call('hget', KEYS[1], field))
    if type(count) == 'number' then
      for i = count, 1, -1 do
        longest = math.max(longest, redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i))
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
redis.call('publish', KEYS[2], ARGV[1])
return 1`
	// KEYS: hash. ARGV: lease, write field.
	bareWriteAcquireSrc = `
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
	// KEYS: hash, channel. ARGV: message, lease, write field.
	bareWriteReleaseSrc = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], ARGV[1])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
return 1`
	// The read renewal, batched as (d) is: KEYS[2i-1] a hash, KEYS[2i]
	// its timeout base "{name}"; ARGV[1] the lease, ARGV[i+1] the i-th
	// hold's read field. 1 for each hold still owned, 0 for each gone.
	bareReadRenewSrc = `
local alive = {}
for i = 1, #KEYS / 2 do
  local lock, base = KEYS[2 * i - 1], KEYS[2 * i]
  if redis.call('hget', lock, ARGV[i + 1]) ~= false then
    redis.call('pexpire', lock, ARGV[1])
    if redis.call('hlen', lock) > 1 then
      for _, field in ipairs(redis.call('hkeys', lock)) do
        local count = tonumber(redis.call('hget', lock, field))
        if type(count) == 'number' then
          for n = count, 1, -1 do
            redis.call('pexpire', base .. ':' .. field .. ':rwlock_timeout:' .. n, ARGV[1])
          end
        end
      end
    end
    alive[i] = 1
  else
    alive[i] = 0
  end
end
return alive`
)

var (
	bareReadAcquire  = rueidis.NewLuaScript(bareReadAcquireSrc)
	bareReadRelease  = rueidis.NewLuaScript(bareReadReleaseSrc)
	bareWriteAcquire = rueidis.NewLuaScript(bareWriteAcquireSrc)
	bareWriteRelease = rueidis.NewLuaScript(bareWriteReleaseSrc)
	bareReadRenew    = rueidis.NewLuaScript(bareReadRenewSrc)
)

// rwNames are one name's keys in the read-write references.
type rwNames struct{ lock, channel, base string }

func rwKeys(name string) rwNames {
	return rwNames{lock: name, channel: "redisson_rwlock:{" + name + "}", base: "{" + name + "}"}
}

// timeouts is owner's timeout-key prefix on k.
func (k rwNames) timeouts(owner string) string { return k.base + ":" + owner + ":rwlock_timeout" }

func bareReadLock(ctx context.Context, rc rueidis.Client, k rwNames, owner string) error {
	return nilIsGranted(bareReadAcquire.Exec(ctx, rc, []string{k.lock, k.timeouts(owner)},
		[]string{bareLease, owner, owner + ":write"}).Error())
}

func bareReadUnlock(ctx context.Context, rc rueidis.Client, k rwNames, owner string) error {
	return nilIsNotHeld(bareReadRelease.Exec(ctx, rc, []string{k.lock, k.channel, k.timeouts(owner), k.base},
		[]string{"0", owner}).Error())
}

func bareWriteLock(ctx context.Context, rc rueidis.Client, k rwNames, owner string) error {
	return nilIsGranted(bareWriteAcquire.Exec(ctx, rc, []string{k.lock}, []string{bareLease, owner + ":write"}).Error())
}

func bareWriteUnlock(ctx context.Context, rc rueidis.Client, k rwNames, owner string) error {
	return nilIsNotHeld(bareWriteRelease.Exec(ctx, rc, []string{k.lock, k.channel},
		[]string{"0", bareLease, owner + ":write"}).Error())
}

// nilIsGranted reads an acquire's reply: nil is granted, a wait hint busy.
func nilIsGranted(err error) error {
	if rueidis.IsRedisNil(err) {
		return nil
	}
	if err == nil {
		return errBusy
	}
	return err
}

// nilIsNotHeld reads a release's reply: nil is a hold not found.
func nilIsNotHeld(err error) error {
	if rueidis.IsRedisNil(err) {
		return errNotHeld
	}
	return err
}

// bareReadRenewBatch renews the read holds on locks, each owned by
// owners[i], with one reference read renewal.
func bareReadRenewBatch(ctx context.Context, rc rueidis.Client, locks, owners []string) error {
	ks := make([]string, 0, 2*len(locks))
	for _, l := range locks {
		ks = append(ks, l, rwKeys(l).base)
	}
	vals, err := bareReadRenew.Exec(ctx, rc, ks, append([]string{bareLease}, owners...)).AsIntSlice()
	if err != nil {
		return err
	}
	for _, v := range vals {
		if v != 1 {
			return errors.New("a reference read renewal found a hold gone")
		}
	}
	return nil
}

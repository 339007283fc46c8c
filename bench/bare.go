package main

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/rueidis"
)

// bareAcquireSrc and bareReleaseSrc are Redisson's RLock pair (the hash
// layout redisync shares): EXISTS / HEXISTS / HINCRBY / PEXPIRE to take or
// re-enter, HEXISTS / HINCRBY −1 / DEL / PUBLISH to release.
const (
	bareAcquireSrc = `
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`
	bareReleaseSrc = `
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`
)

// The reference scripts, with no library logic around them: what a lock
// costs the server with no more than its own guarantee. They run through
// the same auto-pipelining rueidis client as redisync (EVALSHA, EVAL once
// on NOSCRIPT).
var (
	// bareAcquire and bareRelease: bareAcquireSrc and bareReleaseSrc.
	bareAcquire = rueidis.NewLuaScript(bareAcquireSrc)
	bareRelease = rueidis.NewLuaScript(bareReleaseSrc)

	// fencedAcquire and fencedRelease are the smallest pair with
	// redisync's fencing guarantee and no helper prelude: the acquire
	// checks the key's type, takes a token max(last + 1, server TIME in µs)
	// and records it with the hold (TYPE, TIME, GET, HSET, PEXPIRE); the
	// release checks owner and token, deletes, keeps the last token 10 s
	// and wakes the waiters (HGET ×2, DEL, SET PX, PUBLISH).
	fencedAcquire = rueidis.NewLuaScript(`
local t = redis.call('type', KEYS[1]).ok
if t == 'none' then
  local now = redis.call('time')
  local token = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local last = tonumber(redis.call('get', KEYS[2]) or '0')
  if last >= token then token = last + 1 end
  redis.call('hset', KEYS[1], ARGV[2], 1, 'redisync:token', string.format('%.0f', token))
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {token, 1}
end
if t ~= 'hash' then
  return redis.error_reply('WRONGKIND')
end
return redis.call('pttl', KEYS[1])`)
	fencedRelease = rueidis.NewLuaScript(`
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0')
local token = redis.call('hget', KEYS[1], 'redisync:token')
if count == 0 or token ~= ARGV[2] then
  return {0, 0}
end
if count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  return {1, count - 1}
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[3], token, 'PX', 10000)
redis.call('publish', KEYS[2], '0')
return {1, 0}`)

	// bareRenew is the bare batch renewal: HEXISTS + PEXPIRE per hold
	// (KEYS[i], owner ARGV[i+1], lease ARGV[1]); 1 for each hold still
	// owned, 0 for each gone.
	bareRenew = rueidis.NewLuaScript(`
local alive = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    alive[i] = 1
  else
    alive[i] = 0
  end
end
return alive`)
)

// bareLease is the lease of the reference pairs, in ms.
const bareLease = "30000"

// bareNames are one name's keys in the reference pairs: Redisson's lock
// hash and channel, and redisync's last-token key.
type bareNames struct{ lock, channel, token string }

func bareKeys(name string) bareNames {
	return bareNames{lock: name, channel: "redisson_lock__channel:{" + name + "}", token: "redisync_lock_token:{" + name + "}"}
}

// pair is one acquire+release of a reference lock on a free name.
type pair func(ctx context.Context, rc rueidis.Client, k bareNames, owner string) error

var (
	errBusy    = errors.New("a reference acquire found its free name held")
	errNotHeld = errors.New("a reference release found the lock not held")
)

// barePair is Redisson's script pair.
func barePair(ctx context.Context, rc rueidis.Client, k bareNames, owner string) error {
	if err := bareLock(ctx, rc, k, owner); err != nil {
		return err
	}
	return bareUnlock(ctx, rc, k, owner)
}

func bareLock(ctx context.Context, rc rueidis.Client, k bareNames, owner string) error {
	err := bareAcquire.Exec(ctx, rc, []string{k.lock}, []string{bareLease, owner}).Error()
	if rueidis.IsRedisNil(err) {
		return nil
	}
	if err == nil {
		return errBusy
	}
	return err
}

func bareUnlock(ctx context.Context, rc rueidis.Client, k bareNames, owner string) error {
	err := bareRelease.Exec(ctx, rc, []string{k.lock, k.channel}, []string{"0", bareLease, owner}).Error()
	if rueidis.IsRedisNil(err) {
		return errNotHeld
	}
	return err
}

// fencedPair is the minimal pair with a fencing token.
func fencedPair(ctx context.Context, rc rueidis.Client, k bareNames, owner string) error {
	token, err := fencedLock(ctx, rc, k, owner)
	if err != nil {
		return err
	}
	return fencedUnlock(ctx, rc, k, owner, token)
}

func fencedLock(ctx context.Context, rc rueidis.Client, k bareNames, owner string) (int64, error) {
	vals, err := fencedAcquire.Exec(ctx, rc, []string{k.lock, k.token}, []string{bareLease, owner}).AsIntSlice()
	if err != nil {
		return 0, err
	}
	if len(vals) != 2 {
		return 0, errBusy
	}
	return vals[0], nil
}

func fencedUnlock(ctx context.Context, rc rueidis.Client, k bareNames, owner string, token int64) error {
	vals, err := fencedRelease.Exec(ctx, rc, []string{k.lock, k.channel, k.token},
		[]string{owner, strconv.FormatInt(token, 10)}).AsIntSlice()
	if err == nil && (len(vals) != 2 || vals[0] != 1) {
		err = errNotHeld
	}
	return err
}

// nativePair is SET NX PX and DEL: the cheapest lock there is (no owner
// check on release, no token, no wake-up).
func nativePair(ctx context.Context, rc rueidis.Client, k bareNames, owner string) error {
	if err := nativeLock(ctx, rc, k, owner); err != nil {
		return err
	}
	return nativeUnlock(ctx, rc, k)
}

func nativeLock(ctx context.Context, rc rueidis.Client, k bareNames, owner string) error {
	err := rc.Do(ctx, rc.B().Set().Key(k.lock).Value(owner).Nx().PxMilliseconds(30000).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return errBusy
	}
	return err
}

func nativeUnlock(ctx context.Context, rc rueidis.Client, k bareNames) error {
	return rc.Do(ctx, rc.B().Del().Key(k.lock).Build()).Error()
}

// bareRenewBatch renews the holds on locks, each owned by owners[i], with
// one bare renewal script.
func bareRenewBatch(ctx context.Context, rc rueidis.Client, locks, owners []string) error {
	vals, err := bareRenew.Exec(ctx, rc, locks, append([]string{bareLease}, owners...)).AsIntSlice()
	if err != nil {
		return err
	}
	for _, v := range vals {
		if v != 1 {
			return errors.New("a bare renewal found a hold gone")
		}
	}
	return nil
}

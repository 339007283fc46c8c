-- lib: helpers shared by the lock scripts. The Go side prepends this file to
-- every script that uses it, so each script is still one self-contained EVAL.

-- Server time in microseconds (below 2^53, so exact in Lua numbers).
local function now_us()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The next fencing token: a hybrid logical clock, server time in microseconds
-- but never at or below the last token issued for the name (token_key).
local function next_token(token_key)
  local token = now_us()
  local last = tonumber(redis.call('get', token_key) or '0')
  if last >= token then
    token = last + 1
  end
  return token
end

-- Called when a lock's hash (which held the last token) is deleted: keep the
-- token in token_key only while the server clock has not yet passed it, so
-- the next grant still exceeds it. In practice the clock has moved on.
local function keep_token(token, token_key)
  if token >= now_us() then
    redis.call('set', token_key, string.format('%.0f', token), 'PX', 1000)
  end
end

-- Raise key's expiry to at least ms; never shorten it, never touch a key
-- without expiry.
local function extend(key, ms)
  local pttl = redis.call('pttl', key)
  if pttl >= 0 and pttl < ms then
    redis.call('pexpire', key, ms)
  end
end

-- Give key an expiry of at least ms, also when it has none yet (a key this
-- library created, such as a wait queue, must never outlive its users).
local function expire_at_least(key, ms)
  local pttl = redis.call('pttl', key)
  if pttl == -1 or pttl < ms then
    redis.call('pexpire', key, ms)
  end
end

-- For operator scripts (force unlock): the reply to give at once when key
-- holds no lock — 0 when absent, an error when it is not a hash — or nil
-- when it is a hash to act on.
local function unless_hash(key)
  local kind = redis.call('type', key)['ok']
  if kind == 'none' then
    return 0
  end
  if kind ~= 'hash' then
    return redis.error_reply('WRONGTYPE key is a ' .. kind .. ', not a lock')
  end
  return nil
end

-- Lock layout (rlock, fairlock): a hash with field <owner> = hold count and
-- field "redisync:token" = the hold's fencing token.

-- Create the lock for owner with a fresh token; returns the acquire reply.
local function grant(key, owner, lease, token_key)
  local token = next_token(token_key)
  redis.call('hset', key, owner, 1, 'redisync:token', string.format('%.0f', token))
  redis.call('pexpire', key, lease)
  return {token, 1}
end

-- Nest one more hold of owner, who holds key; returns the acquire reply.
local function reenter(key, owner, lease, non_reentrant)
  if non_reentrant == '1' then
    return redis.error_reply('NON_REENTRANT lock already held by this owner')
  end
  local count = redis.call('hincrby', key, owner, 1)
  -- Re-entering never shortens the lease an outer hold relies on.
  extend(key, lease)
  return {tonumber(redis.call('hget', key, 'redisync:token') or '0'), count}
end

-- Undo one hold (or all) of owner per the release contract (see
-- rlock_release.lua). Returns the reply, and true when the lock was deleted.
local function release_hold(key, owner, lease, expected, token_key)
  local count = tonumber(redis.call('hget', key, owner) or '0')
  if count == 0 or (expected > 0 and count ~= expected) then
    return {0, count}, false
  end
  if expected >= 0 and count > 1 then
    redis.call('hincrby', key, owner, -1)
    extend(key, lease)
    return {1, count - 1}, false
  end
  local token = tonumber(redis.call('hget', key, 'redisync:token') or '0')
  redis.call('del', key)
  keep_token(token, token_key)
  return {1, 0}, true
end

-- Fair queue (fairlock): zset queue (owner -> arrival) and zset heartbeats
-- (owner -> deadline in server ms).

-- Drop every waiter whose heartbeat deadline is at or before now_ms;
-- returns true when there was one.
local function drop_dead_waiters(queue, heartbeats, now_ms)
  local dead = redis.call('zrangebyscore', heartbeats, '-inf', now_ms)
  for _, owner in ipairs(dead) do
    redis.call('zrem', queue, owner)
  end
  if #dead > 0 then
    redis.call('zremrangebyscore', heartbeats, '-inf', now_ms)
  end
  return #dead > 0
end

-- Tell the first waiter, if any, that the lock is free.
-- notify publishes a wake-up. A failed PUBLISH (an ACL that denies it, a
-- channel pattern the user may not use) must not abort the script after
-- its writes: the release stands, and waiters fall back to their bounded
-- poll.
local function notify(publish, channel, message)
  redis.pcall(publish, channel, message)
end

local function wake_head(queue, channel_prefix, publish)
  local head = redis.call('zrange', queue, 0, 0)[1]
  if head then
    notify(publish, channel_prefix .. ':' .. head, '0')
  end
end

-- Add owner to a wait queue at the tail, unless it already has a place, and
-- heartbeat it: its place lapses at now_ms + wait unless refreshed. Both
-- zsets live at least as long as the longest waiter's timeout.
local function join_queue(queue, heartbeats, owner, now, now_ms, wait)
  if not redis.call('zscore', queue, owner) then
    local arrival = now
    local tail = redis.call('zrange', queue, -1, -1, 'withscores')
    if tail[2] and tonumber(tail[2]) >= arrival then
      arrival = tonumber(tail[2]) + 1
    end
    redis.call('zadd', queue, string.format('%.0f', arrival), owner)
  end
  redis.call('zadd', heartbeats, now_ms + wait, owner)
  expire_at_least(queue, wait)
  expire_at_least(heartbeats, wait)
end

-- Semaphore holders: zset holders (permit id -> expiry, server ms) and hash
-- permits (permit id -> count, "used" -> total), always updated together
-- and given the same expiry, so they can only vanish together.

-- Take back the permits of every expired holder; returns how many.
local function reclaim(holders, permits, now_ms)
  local expired = redis.call('zrangebyscore', holders, '-inf', now_ms)
  if #expired == 0 then
    return 0
  end
  local freed = 0
  for _, id in ipairs(expired) do
    freed = freed + (tonumber(redis.call('hget', permits, id) or '0') or 0)
    redis.call('hdel', permits, id)
  end
  redis.call('zremrangebyscore', holders, '-inf', now_ms)
  if redis.call('hincrby', permits, 'used', -freed) <= 0 then
    redis.call('del', permits)
  end
  return freed
end

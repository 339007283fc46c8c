-- rlock_release: undo one hold (or all holds) of an owner, idempotently.
--
-- KEYS[1]  lock hash
-- KEYS[2]  lock channel (redisson_lock__channel:{name})
-- KEYS[3]  last-token key
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds, applied when holds remain
-- ARGV[3]  expected hold count before this release:
--            n > 0  act only if the count is n (a repeated call finds n-1 and
--                   does nothing, so a retried release never decrements twice)
--            0      decrement whatever the count (an owner resumed elsewhere)
--            -1     release every hold of the owner (cleanup of a lost hold)
-- ARGV[4]  "publish" or "spublish"
--
-- Reply: {acted, count}: acted is 1 when this call changed the lock, count is
-- the owner's hold count afterwards (0: released, or not held at all).
-- A full release deletes the hash and publishes "0" on the channel.
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0')
local expected = tonumber(ARGV[3])
if count == 0 or (expected > 0 and count ~= expected) then
  return {0, count}
end
if expected >= 0 and count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  local lease = tonumber(ARGV[2])
  local pttl = redis.call('pttl', KEYS[1])
  if pttl >= 0 and pttl < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
  return {1, count - 1}
end
local token = tonumber(redis.call('hget', KEYS[1], 'redisync:token') or '0')
redis.call('del', KEYS[1])
-- Keep the token only if the server clock has not passed it yet, so the next
-- grant still exceeds it; in practice the clock has moved on and nothing is kept.
local t = redis.call('time')
if token >= tonumber(t[1]) * 1000000 + tonumber(t[2]) then
  redis.call('set', KEYS[3], string.format('%.0f', token), 'PX', 1000)
end
redis.call(ARGV[4], KEYS[2], '0')
return {1, 0}

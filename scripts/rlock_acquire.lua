-- rlock_acquire: take or re-enter a reentrant lock (Redisson RLock layout).
--
-- KEYS[1]  lock hash, named by the raw lock name; field <owner> = hold count,
--          field "redisync:token" = fencing token of the current hold
-- KEYS[2]  last-token key (string): the last token issued, kept only briefly
--          after a release when the server clock has not yet passed it
-- ARGV[1]  lease in milliseconds (> 0)
-- ARGV[2]  owner id
-- ARGV[3]  "1" for a non-reentrant lock, "0" otherwise
--
-- Reply:
--   {token, count}  acquired (count = hold count after this acquisition)
--   PTTL            busy: the holder's remaining lease in ms (-1: no expiry)
--   error           "NON_REENTRANT" when ARGV[3] is "1" and the owner holds it
local lease = tonumber(ARGV[1])
if redis.call('exists', KEYS[1]) == 0 then
  -- Hybrid logical clock: server time in microseconds, but never at or below
  -- the last token issued. Microseconds keep tokens below 2^53, exact in Lua.
  local t = redis.call('time')
  local token = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local last = tonumber(redis.call('get', KEYS[2]) or '0')
  if last >= token then
    token = last + 1
  end
  redis.call('hset', KEYS[1], ARGV[2], 1, 'redisync:token', string.format('%.0f', token))
  redis.call('pexpire', KEYS[1], lease)
  return {token, 1}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  if ARGV[3] == '1' then
    return redis.error_reply('NON_REENTRANT lock already held by this owner')
  end
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  -- Re-entering never shortens the lease an outer hold relies on.
  local pttl = redis.call('pttl', KEYS[1])
  if pttl >= 0 and pttl < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
  return {tonumber(redis.call('hget', KEYS[1], 'redisync:token') or '0'), count}
end
return redis.call('pttl', KEYS[1])

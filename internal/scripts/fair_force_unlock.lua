-- fair_force_unlock: delete a fair lock whoever holds it (operator action),
-- and wake the first waiter. Runs with lib.lua prepended.
--
-- KEYS     as fair_release.lua (1 lock hash, 2 queue, 3 heartbeats,
--          4 last-token key, 5 waiter channel prefix, 6 holder-info
--          hash, optional: deleted with the lock)
-- ARGV[1]  "publish" or "spublish"
--
-- Reply: 1 when a lock was deleted, 0 when there was none. Anything that is
-- not a lock of this kind is left alone and reported as WRONGKIND
-- (keyspace.lua); NOPERM names a write the ACL denies.
local shape = lock_shape(KEYS[1])
if shape == 'none' then
  return 0
end
if shape == 'rwlock' then
  return wrong_kind(1, 'a read-write lock')
end
if shape ~= 'lock' or not lock_fields(KEYS[1]) then
  return wrong_kind(1, shape == 'lock' and 'a hash with fields no lock has' or shape)
end
local refusal = check_own({{2, 'zset'}, {3, 'zset'}, {4, 'string', TOKEN}})
  or permitted({{'del', KEYS[1]}, {'set', KEYS[4]}, {'zrem', KEYS[2]}, {'zremrangebyscore', KEYS[3]}})
if refusal then
  return refusal
end
local token = tonumber(redis.call('hget', KEYS[1], 'redisync:token') or '0')
-- TIME before the first write: an ACL may deny it (it is only in @fast),
-- and a denied command after a write would leave that write behind.
local now = now_us()
redis.call('del', KEYS[1])
keep_token(token, KEYS[4], now)
if KEYS[6] then
  info_drop(KEYS[6], nil, true)
end
drop_dead_waiters(KEYS[2], KEYS[3], math.floor(now / 1000))
wake_head(KEYS[2], KEYS[5], ARGV[1])
return 1

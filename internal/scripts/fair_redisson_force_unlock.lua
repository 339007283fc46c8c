-- fair_redisson_force_unlock: delete a fair lock whoever holds it (operator
-- action) and tell the head of Redisson's fair queue. Runs with lib.lua,
-- keyspace.lua and fair_redisson_lib.lua prepended.
--
-- KEYS     as fair_redisson_acquire.lua
-- ARGV[1]  "publish" or "spublish"
--
-- Reply: 1 when a lock was deleted, 0 when there was none; WRONGKIND for
-- anything that is not a lock of this kind.
local shape = lock_shape(KEYS[1])
if shape == 'none' then
  return 0
end
if shape ~= 'lock' or not lock_fields(KEYS[1]) then
  return wrong_kind(1, shape == 'lock' and 'a hash with fields no lock has' or shape)
end
do
  local refusal = typed(2, 'list') or typed(3, 'zset') or check_own({{4, 'string', TOKEN}})
    or permitted({{'del', KEYS[1]}, {'set', KEYS[4]}, {'lpop', KEYS[2]}, {'zrem', KEYS[3]}})
  if refusal then
    return refusal
  end
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
purge_heads(KEYS[2], KEYS[3], math.floor(now / 1000))
wake_redisson_head(KEYS[2], KEYS[5], ARGV[1])
return 1

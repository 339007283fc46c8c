-- rlock_force_unlock: delete a lock whoever holds it (operator action).
-- Runs with lib.lua prepended.
--
-- KEYS[1]  lock hash
-- KEYS[2]  lock channel
-- KEYS[3]  last-token key
-- KEYS[4]  holder-info hash, optional: deleted with the lock
-- ARGV[1]  "publish" or "spublish"
--
-- Reply: 1 when a lock was deleted (and "0" published), 0 when there was none.
-- Anything that is not a lock of this kind — a user's hash, a key of
-- another type, a read-write lock, a semaphore — is left alone and reported
-- as WRONGKIND (see keyspace.lua); NOPERM names a write the ACL denies.
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
local refusal = check_own({{3, 'string', TOKEN}}) or permitted({{'del', KEYS[1]}, {'set', KEYS[3]}})
if refusal then
  return refusal
end
local token = tonumber(redis.call('hget', KEYS[1], 'redisync:token') or '0')
-- TIME before the first write: an ACL may deny it (it is only in @fast),
-- and a denied command after a write would leave that write behind.
local now = now_us()
redis.call('del', KEYS[1])
keep_token(token, KEYS[3], now)
if KEYS[4] then
  info_drop(KEYS[4], nil, true)
end
notify(ARGV[1], KEYS[2], '0')
return 1

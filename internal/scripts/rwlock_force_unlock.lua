-- rwlock_force_unlock: delete a read-write lock whoever holds it, readers
-- and writer (operator action), and wake every waiter. Runs with lib.lua
-- prepended.
--
-- KEYS[1]  lock hash
-- KEYS[2]  channel "redisson_rwlock:{name}"
-- KEYS[3]  last-token key
-- KEYS[4]  phase key: the token of the lock's current phase (rwlock_lib.lua)
-- KEYS[5]  holder-info hash, optional: deleted with the lock
-- ARGV[1]  "publish" or "spublish"
--
-- Reply: 1 when a lock was deleted, 0 when there was none. The read holds'
-- timeout keys are left to expire: without the hash they hold nothing.
-- Anything that is not a read-write lock — a user's hash, a key of another
-- type, an rlock's or fair lock's hash, a semaphore — is left alone and
-- reported as WRONGKIND (keyspace.lua); NOPERM names a write the ACL denies.
local shape = lock_shape(KEYS[1])
if shape == 'none' then
  return 0
end
if shape == 'lock' then
  return wrong_kind(1, 'a lock that is no read-write lock')
end
if shape ~= 'rwlock' or not lock_fields(KEYS[1]) then
  return wrong_kind(1, shape == 'rwlock' and 'a hash with fields no lock has' or shape)
end
do
  local refusal = check_own({{3, 'string', TOKEN}, {4, 'string', RW_PHASE}})
    or permitted({{'del', KEYS[1]}, {'set', KEYS[3]}, {'del', KEYS[4]}})
  if refusal then
    return refusal
  end
end
local token = phase_token(KEYS[1], KEYS[4], redis.call('hget', KEYS[1], 'mode'))
-- TIME before the first write: an ACL may deny it (it is only in @fast),
-- and a denied command after a write would leave that write behind.
local now = now_us()
redis.call('del', KEYS[1])
if KEYS[5] then
  info_drop(KEYS[5], nil, true)
end
phase_end(KEYS[4], KEYS[3], token, now)
notify(ARGV[1], KEYS[2], '1')
return 1

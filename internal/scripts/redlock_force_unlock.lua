-- redlock_force_unlock: delete a Redlock's key on one node whoever holds it
-- (operator action). Runs with lib.lua prepended.
--
-- KEYS[1]  lock key (string: the holder's value, with an expiry)
-- KEYS[2]  holder-info hash, optional: deleted with the lock
--
-- Reply: 1 when a lock was deleted, 0 when there was none. Anything else at
-- the name — another kind's key, a user's string without expiry — is left
-- alone and reported as WRONGKIND (keyspace.lua); NOPERM names a write the
-- ACL denies.
local found = foreign(KEYS[1], 'string')
if found then
  return wrong_kind(1, found)
end
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
local refusal = permitted({{'del', KEYS[1]}})
if refusal then
  return refusal
end
redis.call('del', KEYS[1])
if KEYS[2] then
  info_drop(KEYS[2], nil, true)
end
return 1

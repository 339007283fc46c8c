-- redlock_release: delete the lock on one node if this owner holds it.
--
-- KEYS[1]  lock key
-- KEYS[2]  holder-info hash, optional: deleted with the lock
-- ARGV[1]  owner id
--
-- Reply: 1 deleted, 0 not this owner's (or absent, or no string: another
-- kind's key, which is never touched).
if not KEYS[2] and redis.pcall('get', KEYS[1]) == ARGV[1] then
  -- The common path: the key holds this owner (so it is ours), and DEL is
  -- the one write (a denied DEL leaves nothing written, and falls through).
  local n = redis.pcall('del', KEYS[1])
  if type(n) == 'number' then
    return n
  end
end
-- Rare paths: a holder record, another value, another type, a denial.
if redis.call('type', KEYS[1]).ok ~= 'string' then
  return 0
end
do
  -- One write, so a denied DEL leaves nothing half-done; the check is for
  -- an error that names it (keyspace.lua).
  local refusal = permitted({{'del', KEYS[1]}})
  if refusal then
    return refusal
  end
end
if redis.call('get', KEYS[1]) == ARGV[1] then
  if KEYS[2] then
    info_drop(KEYS[2], nil, true)
  end
  return redis.call('del', KEYS[1])
end
return 0

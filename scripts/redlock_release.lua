-- redlock_release: delete the lock on one node if this owner holds it.
--
-- KEYS[1]  lock key
-- ARGV[1]  owner id
--
-- Reply: 1 deleted, 0 not this owner's (or absent).
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0

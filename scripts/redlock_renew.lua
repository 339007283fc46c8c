-- redlock_renew: extend the lock on one node if this owner still holds it.
--
-- KEYS[1]  lock key
-- ARGV[1]  owner id
-- ARGV[2]  lease in ms
--
-- Reply: 1 extended, 0 gone (never re-created: a node that lost the key,
-- for example by restarting, does not count for this hold any more).
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0

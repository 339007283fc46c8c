-- rwlock_force_unlock: delete a read-write lock whoever holds it, readers
-- and writer (operator action), and wake every waiter. Runs with lib.lua
-- prepended.
--
-- KEYS[1]  lock hash
-- KEYS[2]  channel "redisson_rwlock:{name}"
-- KEYS[3]  last-token key
-- ARGV[1]  "publish" or "spublish"
--
-- Reply: 1 when a lock was deleted, 0 when there was none. The read holds'
-- timeout keys are left to expire: without the hash they hold nothing.
local early = unless_hash(KEYS[1])
if early then
  return early
end
local token = redis.call('hget', KEYS[1], 'redisync:token')
redis.call('del', KEYS[1])
if token then
  keep_token(tonumber(string.sub(token, 2)), KEYS[3])
end
notify(ARGV[1], KEYS[2], '1')
return 1

-- rlock_force_unlock: delete a lock whoever holds it (operator action).
-- Runs with lib.lua prepended.
--
-- KEYS[1]  lock hash
-- KEYS[2]  lock channel
-- KEYS[3]  last-token key
-- ARGV[1]  "publish" or "spublish"
--
-- Reply: 1 when a lock was deleted (and "0" published), 0 when there was none.
-- A key of another type is left alone and reported as an error.
local early = unless_hash(KEYS[1])
if early then
  return early
end
local token = tonumber(redis.call('hget', KEYS[1], 'redisync:token') or '0')
redis.call('del', KEYS[1])
keep_token(token, KEYS[3])
notify(ARGV[1], KEYS[2], '0')
return 1

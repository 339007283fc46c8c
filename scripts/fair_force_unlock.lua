-- fair_force_unlock: delete a fair lock whoever holds it (operator action),
-- and wake the first waiter. Runs with lib.lua prepended.
--
-- KEYS     as fair_release.lua (1 lock hash, 2 queue, 3 heartbeats,
--          4 last-token key, 5 waiter channel prefix)
-- ARGV[1]  "publish" or "spublish"
--
-- Reply: 1 when a lock was deleted, 0 when there was none. A key of another
-- type is left alone and reported as an error.
local early = unless_hash(KEYS[1])
if early then
  return early
end
local token = tonumber(redis.call('hget', KEYS[1], 'redisync:token') or '0')
redis.call('del', KEYS[1])
keep_token(token, KEYS[4])
drop_dead_waiters(KEYS[2], KEYS[3], math.floor(now_us() / 1000))
wake_head(KEYS[2], KEYS[5], ARGV[1])
return 1

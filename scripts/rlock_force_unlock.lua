-- rlock_force_unlock: delete a lock whoever holds it (operator action).
--
-- KEYS[1]  lock hash
-- KEYS[2]  lock channel
-- KEYS[3]  last-token key
-- ARGV[1]  "publish" or "spublish"
--
-- Reply: 1 when a lock was deleted (and "0" published), 0 when there was none.
-- A key of another type is left alone and reported as an error.
local kind = redis.call('type', KEYS[1])['ok']
if kind == 'none' then
  return 0
end
if kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE key is a ' .. kind .. ', not a lock')
end
local token = tonumber(redis.call('hget', KEYS[1], 'redisync:token') or '0')
redis.call('del', KEYS[1])
local t = redis.call('time')
if token >= tonumber(t[1]) * 1000000 + tonumber(t[2]) then
  redis.call('set', KEYS[3], string.format('%.0f', token), 'PX', 1000)
end
redis.call(ARGV[1], KEYS[2], '0')
return 1

-- rwlock_write_release: undo one write hold (or all) of an owner,
-- idempotently. Runs with lib.lua prepended.
--
-- KEYS[1]  lock hash
-- KEYS[2]  channel "redisson_rwlock:{name}"
-- KEYS[3]  last-token key
-- ARGV[1]  "<owner>:write" (the write field)
-- ARGV[2]  lease in milliseconds, applied when write holds remain
-- ARGV[3]  expected write count before this release (n > 0, 0 = any, -1 =
--          all), as in rlock_release.lua
-- ARGV[4]  "publish" or "spublish"
--
-- Reply: {acted, count} as rlock_release.lua. At the last write hold: if the
-- owner still has read holds the lock is downgraded to mode "read" and "1" is
-- published so waiting readers join at once; otherwise the hash is deleted
-- and "1" is published.
--
-- A key that is no read-write lock holds no hold of this owner: {0, 0},
-- nothing written; WRONGKIND for a last-token key that is not ours, NOPERM
-- naming a write the ACL denies (keyspace.lua).
local shape = lock_shape(KEYS[1])
if (shape ~= 'none' and shape ~= 'rwlock') or hold_count(KEYS[1], ARGV[1]) == nil then
  return {0, 0}
end
do
  local refusal = check_own({{3, 'string', TOKEN}})
    or permitted({{'hincrby', KEYS[1]}, {'pexpire', KEYS[1]}, {'hdel', KEYS[1]}, {'hset', KEYS[1]},
      {'del', KEYS[1]}, {'set', KEYS[3]}})
  if refusal then
    return refusal
  end
end
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0') or 0
local expected = tonumber(ARGV[3])
if count == 0 or (expected > 0 and count ~= expected) then
  return {0, count}
end
if expected >= 0 and count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  extend(KEYS[1], tonumber(ARGV[2]))
  return {1, count - 1}
end
redis.call('hdel', KEYS[1], ARGV[1])
local token = redis.call('hget', KEYS[1], 'redisync:token')
local others = redis.call('hlen', KEYS[1]) - 1
if token then
  others = others - 1
end
if others > 0 then
  redis.call('hset', KEYS[1], 'mode', 'read')
else
  redis.call('del', KEYS[1])
  if token then
    keep_token(tonumber(string.sub(token, 2)), KEYS[3])
  end
end
notify(ARGV[4], KEYS[2], '1')
return {1, 0}

-- rlock_renew: extend many holds in one call (the watchdog's batch).
-- Runs with lib.lua prepended.
--
-- KEYS[i]      lock hash of hold i (all in one hash slot on a Cluster), i = 1..n
-- KEYS[n+i]    holder-info hash of hold i (KEYS[i] again for none): its
--              lease is extended with the hold's (keyspace.lua: info_extend)
-- ARGV[1]      lease in milliseconds
-- ARGV[2i]     owner id of hold i
-- ARGV[2i+1]   fencing token of hold i ("0": do not check the token)
--
-- Reply: array with 1 for each hold still owned (its PTTL is now at least the
-- lease) and 0 for each hold that is gone. A renewal never creates a key and
-- never extends a later hold of the same owner (its token differs).
--
-- A key that is not a hash any more (overwritten with SET, turned into a
-- list) is not this lock: that hold is gone. The TYPE check comes first so
-- that one such key cannot abort the script (WRONGTYPE) and with it the
-- renewal of every other hold in the batch.
local lease = tonumber(ARGV[1])
local alive = {}
local n = (#ARGV - 1) / 2
for i = 1, n do
  local key = KEYS[i]
  local owner, token = ARGV[2 * i], ARGV[2 * i + 1]
  local ok = redis.call('type', key).ok == 'hash' and redis.call('hexists', key, owner) == 1
  if ok and token ~= '0' then
    ok = redis.call('hget', key, 'redisync:token') == token
  end
  if ok then
    extend(key, lease)
    if KEYS[n + i] ~= key then
      info_extend(KEYS[n + i], lease)
    end
    alive[i] = 1
  else
    alive[i] = 0
  end
end
return alive

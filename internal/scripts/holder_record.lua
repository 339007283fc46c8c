#!lua
-- holder_record: write the holder records of holds the watchdog keeps (at a
-- hold's first renewal, a third of its lease after the grant, and again
-- before the record would run out), so that a short hold costs no record
-- nobody reads. Runs with lib.lua and keyspace.lua prepended. Its shebang
-- makes Redis refuse it whole when out of memory: a record is worth less
-- than the memory it would take then, and the next renewal tries again.
--
-- KEYS[i]      holder-info hash of hold i (all in one hash slot on a Cluster)
-- ARGV[1]      the payload (what redisync.HolderInfo encodes)
-- ARGV[2]      how long the records live, in ms (at least)
-- ARGV[2i+1]   hold i's field in the hash (the lock's field for the hold)
-- ARGV[2i+2]   ms since hold i was granted: the record's start is now - that;
--              "-1": a refresh of a record written before
--
-- Reply: 1. A hold's record is written once: a record already there (of a
-- shared owner's first hold, or of this hold) keeps its start. A key that is
-- not a holder-info hash of ours, or that the ACL does not let this user
-- write, is left alone (keyspace.lua: info_ours). A refresh costs two calls:
-- the hold's own record in the hash says it is ours, and its expiry is only
-- raised (PEXPIRE GT), both through pcall, so a key of another type or a
-- denied command skips that hold instead of failing the call.
local payload, ttl = ARGV[1], tonumber(ARGV[2])
if payload == '' or #payload > INFO_MAX then
  return 1
end
local now_ms
for i = 1, #KEYS do
  local key, field, age = KEYS[i], ARGV[2 * i + 1], ARGV[2 * i + 2]
  if age == '-1' then
    if redis.pcall('hexists', key, field) == 1 then
      redis.pcall('pexpire', key, ttl, 'GT')
    end
  elseif info_ours(key) then
    now_ms = now_ms or math.floor(now_us() / 1000)
    redis.call('hsetnx', key, field, '1|' .. string.format('%.0f', now_ms - tonumber(age)) .. '|' .. payload)
    expire_at_least(key, ttl)
  end
end
return 1

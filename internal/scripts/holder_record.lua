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
-- ARGV[2i+2]   ms since hold i was granted: the record's start is now - that
--
-- Reply: 1. A hold's record is written once: a record already there (of a
-- shared owner's first hold, or of this hold) keeps its start. A key that is
-- not a holder-info hash of ours, or that the ACL does not let this user
-- write, is left alone (keyspace.lua: info_ours).
local payload, ttl = ARGV[1], tonumber(ARGV[2])
if payload == '' or #payload > INFO_MAX then
  return 1
end
local now_ms = math.floor(now_us() / 1000)
for i = 1, #KEYS do
  local key = KEYS[i]
  if info_ours(key) then
    local start = now_ms - tonumber(ARGV[2 * i + 2])
    redis.call('hsetnx', key, ARGV[2 * i + 1], '1|' .. string.format('%.0f', start) .. '|' .. payload)
    expire_at_least(key, ttl)
  end
end
return 1

-- redlock_renew: extend many Redlock holds on one node in one call (the
-- watchdog's batch for this node). Runs with lib.lua prepended.
--
-- KEYS[i]      lock key of hold i (all in one hash slot on a Cluster node)
-- KEYS[n+i]    holder-info hash of hold i (KEYS[i] again for none), for n
--              holds: extended with the hold (keyspace.lua)
-- ARGV[1]      lease in milliseconds
-- ARGV[2i]     owner id of hold i
-- ARGV[2i+1]   unused ("0"): the value is the owner id alone
--
-- Reply: array with 1 for each hold extended and 0 for each hold gone. A
-- lock is never re-created: a node that lost the key, for example by
-- restarting, does not count for that hold any more. A key that is not a
-- string (overwritten with another type) is not this hold: 0, checked before
-- GET so that one such key cannot abort the batch (WRONGTYPE).
local lease = ARGV[1]
local alive = {}
local n = (#ARGV - 1) / 2
for i = 1, n do
  local key = KEYS[i]
  local ok = redis.call('type', key).ok == 'string' and redis.call('get', key) == ARGV[2 * i]
  if ok then
    redis.call('pexpire', key, lease)
    if KEYS[n + i] ~= key then
      info_extend(KEYS[n + i], tonumber(lease))
    end
    alive[i] = 1
  else
    alive[i] = 0
  end
end
return alive

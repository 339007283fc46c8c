-- redlock_renew: extend many Redlock holds on one node in one call (the
-- watchdog's batch for this node). It needs no helper, so it runs without a
-- prelude.
--
-- KEYS[i]      lock key of hold i (all in one hash slot on a Cluster node)
-- ARGV[1]      lease in milliseconds
-- ARGV[2i]     owner id of hold i
-- ARGV[2i+1]   unused ("0"): the value is the owner id alone
--
-- Reply: a string with a byte per hold, "1" for each hold extended and "0"
-- for each hold gone (as rlock_renew.lua). A
-- lock is never re-created: a node that lost the key, for example by
-- restarting, does not count for that hold any more. GET goes through
-- pcall: a key that is not a string (overwritten with another type) is not
-- this hold, and its WRONGTYPE reply makes that hold 0 instead of aborting
-- the batch.
local lease = ARGV[1]
local alive = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  if redis.pcall('get', key) == ARGV[2 * i] then
    redis.call('pexpire', key, lease)
    alive[i] = '1'
  else
    alive[i] = '0'
  end
end
return table.concat(alive)

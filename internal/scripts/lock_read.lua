#!lua flags=no-writes
-- lock_read: what is under a lock's name, in one atomic read — its type,
-- PTTL and, for a hash, its fields (engine.ReadLock, behind every kind's
-- IsLocked, HoldCount, TTL and Holders). A script flagged no-writes runs
-- under out of memory, where Redis refuses every command queued in a
-- MULTI (the read was a MULTI: it answered EXECABORT then).
-- Runs with lib.lua prepended (unused).
--
-- KEYS[1]  the lock's hash, named by the raw lock name
--
-- Reply: {type, pttl, fields}: TYPE's answer, PTTL's, and HGETALL's flat
-- field-value array for a hash (empty for anything else).
local t = redis.call('type', KEYS[1]).ok
local fields = {}
if t == 'hash' then
  fields = redis.call('hgetall', KEYS[1])
end
return {t, redis.call('pttl', KEYS[1]), fields}

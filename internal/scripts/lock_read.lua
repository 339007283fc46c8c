#!lua flags=no-writes
-- lock_read: what is under one key of a lock, in one atomic read — its
-- type, PTTL and, when it is of the type the caller reads, its content.
-- Every inspection reads through it: engine.ReadLock (the lock hash, behind
-- every kind's IsLocked, HoldCount, TTL and Holders), fairlock's Queue (a
-- zset, or Redisson's list), Redlock's view of a node (a string) and the
-- command's holder records (a hash). A script flagged no-writes runs under
-- out of memory, where Redis refuses every command queued in a MULTI (these
-- reads were MULTIs: they answered EXECABORT then).
-- Runs with lib.lua prepended (unused).
--
-- KEYS[1]  the key
-- ARGV[1]  the type whose content is read: hash, string, zset or list
--
-- Reply: {type, pttl, content}: TYPE's answer, PTTL's, and, when the type
-- is ARGV[1], the content — a hash's flat field-value array (HGETALL), a
-- string's value as the one element, a zset's members in order (ZRANGE
-- 0 -1), a list's elements (LRANGE 0 -1) — else an empty array (a key of
-- another type is never read whole).
local t = redis.call('type', KEYS[1]).ok
local content = {}
if t == ARGV[1] then
  if t == 'hash' then
    content = redis.call('hgetall', KEYS[1])
  elseif t == 'string' then
    content = {redis.call('get', KEYS[1])}
  elseif t == 'zset' then
    content = redis.call('zrange', KEYS[1], 0, -1)
  elseif t == 'list' then
    content = redis.call('lrange', KEYS[1], 0, -1)
  end
end
return {t, redis.call('pttl', KEYS[1]), content}

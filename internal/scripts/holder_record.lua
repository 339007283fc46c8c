#!lua
-- holder_record: write the holder records of holds the watchdog keeps (at a
-- hold's first renewal, a third of its lease after the grant, and again
-- before the record would run out), so that a short hold costs no record
-- nobody reads. Runs with lib.lua and keyspace.lua prepended. Its shebang
-- makes Redis refuse it whole when out of memory: a record is worth less
-- than the memory it would take then, and the next renewal tries again.
--
-- KEYS[2i-1]   holder-info hash of hold i (all in one hash slot on a Cluster)
-- KEYS[2i]     the key hold i's renewal extends: the lock hash (rlock,
--              fairlock, rwlock), the holders zset (semaphore) or the lock
--              string (Redlock)
-- ARGV[1]      the payload (what redisync.HolderInfo encodes)
-- ARGV[2]      how long the records live, in ms (at least)
-- ARGV[3i]     hold i's field in the hash (the lock's field for the hold:
--              the owner, a read-write lock's write field, a permit id, a
--              Redlock hold's value)
-- ARGV[3i+1]   ms since hold i was granted: the record's start is now - that;
--              "-1": a refresh of a record written before
-- ARGV[3i+2]   hold i's fencing token ("0": none known), checked where its
--              lock hash carries one ("redisync:token")
--
-- Reply: 1. A record is written or refreshed only while its hold is still
-- there (held): the renewal that found it alive ran a moment before, in
-- another call, and a release, a loss or a force-unlock in between must not
-- leave a record its owner's next hold would show. A hold's record is
-- written once: a record already there (of a shared owner's first hold, or
-- of this hold) keeps its start. A key that is not a holder-info hash of
-- ours, or that the ACL does not let this user write, is left alone
-- (keyspace.lua: info_ours). A refresh costs the look at the hold and two
-- calls: the hold's own record in the hash says it is ours, and its expiry
-- is only raised (PEXPIRE GT), both through pcall, so a key of another
-- type or a denied command skips that hold instead of failing the call.

-- Whether lock still carries the hold whose field (and token) are given:
-- a lock hash with the hold's token (rlock, fairlock: one HGET), or the
-- hold's field where the hash carries no token (a read-write lock's lives
-- in its phase key; a hold begun by Redisson) or none is known; a
-- semaphore holder in the zset; a Redlock key with the hold's value. Each
-- look goes through pcall and answers WRONGTYPE for a key of another type,
-- which sends it to the next; anything else (the key gone, another type)
-- holds no hold.
local function held(lock, field, token)
  local v = redis.pcall('hget', lock, 'redisync:token')
  if type(v) == 'string' and token ~= '0' then
    return v == token
  end
  if type(v) ~= 'table' then -- a hash (without a token, or none known), or no key
    return redis.call('hexists', lock, field) == 1
  end
  v = redis.pcall('zscore', lock, field)
  if type(v) ~= 'table' then
    return v ~= false
  end
  return redis.pcall('get', lock) == field
end

local payload, ttl = ARGV[1], tonumber(ARGV[2])
if payload == '' or #payload > INFO_MAX then
  return 1
end
local now_ms
for i = 1, #KEYS / 2 do
  local key, lock = KEYS[2 * i - 1], KEYS[2 * i]
  local field, age, token = ARGV[3 * i], ARGV[3 * i + 1], ARGV[3 * i + 2]
  if not held(lock, field, token) then -- nothing to record
  elseif age == '-1' then
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

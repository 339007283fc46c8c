#!lua
-- rlock_acquire: take or re-enter a reentrant lock (Redisson RLock layout).
-- Runs with lib.lua prepended.
--
-- KEYS[1]  lock hash, named by the raw lock name; field <owner> = hold count,
--          field "redisync:token" = fencing token of the current hold
-- KEYS[2]  last-token key (string): the last token issued, kept after a
--          release until the server clock is 10 s past it (lib.lua keep_token)
-- KEYS[3]  holder-info hash (keyspace.lua: info_record), optional
-- ARGV[1]  lease in milliseconds (> 0)
-- ARGV[2]  owner id
-- ARGV[3]  "1" for a non-reentrant lock, "0" otherwise
-- ARGV[4]  the handle's latch field, "" or absent for none (see lib.lua)
-- ARGV[5]  this request's id: a grant is recorded in the latch, and a
--          request already undone (its caller gave up) is refused as busy
-- ARGV[6]  holder-info payload to record for this owner ("": none)
--
-- Reply:
--   {token, count}  acquired (count = hold count after this acquisition)
--   PTTL            busy: the holder's remaining lease in ms (-1: no expiry)
--   error           "NON_REENTRANT" when ARGV[3] is "1" and the owner holds it
--   error           "WRONGKIND <i> <found>" when KEYS[i] is no key of a lock
--                   (see keyspace.lua); a read-write lock's hash is busy
--   error           "NOPERM ..." naming a write command the ACL denies
--
-- Nothing is written before every key has been checked.
local shape = lock_shape(KEYS[1])
if shape ~= 'none' and shape ~= 'lock' and shape ~= 'rwlock' then
  return wrong_kind(1, shape)
end
local info = KEYS[3]
local refusal = check_own({{2, 'string', TOKEN}}) or (info and info_refusal(3))
  or permitted({{'hset', KEYS[1]}, {'hincrby', KEYS[1]}, {'pexpire', KEYS[1]}})
if refusal then
  return refusal
end
if shape == 'rwlock' or hold_count(KEYS[1], ARGV[2]) == nil then
  -- A read-write lock holds the name (kinds exclude each other by the
  -- hash), or a hash with this owner's field that holds no count.
  return redis.call('pttl', KEYS[1])
end
local lease = tonumber(ARGV[1])
local latch, req = ARGV[4], ARGV[5]
if latch_refuses(KEYS[1], latch, req) then
  return redis.call('pttl', KEYS[1])
end
local fresh = redis.call('exists', KEYS[1]) == 0
if fresh or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local res
  if fresh then
    res = grant(KEYS[1], ARGV[2], lease, KEYS[2])
  else
    res = reenter(KEYS[1], ARGV[2], lease, ARGV[3], KEYS[2])
  end
  if info and type(res) == 'table' and res.err == nil then
    info_record(info, ARGV[2], ARGV[6], lease, fresh)
  end
  return latch_granted(KEYS[1], latch, req, res)
end
return redis.call('pttl', KEYS[1])

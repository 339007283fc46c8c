#!lua
-- rlock_acquire: take or re-enter a reentrant lock (Redisson RLock layout).
-- Runs with the helpers of lib.lua and keyspace.lua it uses prepended, those
-- only its rare paths use at their mark (prelude.go).
--
-- KEYS[1]  lock hash, named by the raw lock name; field <owner> = hold count,
--          field "redisync:token" = fencing token of the current hold
-- KEYS[2]  last-token key (string): the last token issued, kept after a
--          release until the server clock is 10 s past it (lib.lua keep_token)
-- KEYS[3]  holder-info hash (keyspace.lua: info_record), optional
-- ARGV[1]  lease in milliseconds (> 0)
-- ARGV[2]  owner id
-- ARGV[3]  "1" for a non-reentrant lock; "0", "" or absent otherwise
-- ARGV[4]  the handle's latch field, "" or absent for none (see lib.lua)
-- ARGV[5]  this request's id: a grant is recorded in the latch, and a
--          request already undone (its caller gave up) is refused as busy
-- ARGV[6]  holder-info payload to record for this owner ("": none)
--
-- Reply:
--   "<token>"       acquired on a free name (the token in decimal: a string
--                   reply costs the server less than an array), count 1
--   {token, count}  acquired otherwise (count = hold count after this one)
--   PTTL            busy: the holder's remaining lease in ms (-1: no expiry)
--   error           "NON_REENTRANT" when ARGV[3] is "1" and the owner holds it
--   error           "WRONGKIND <i> <found>" when KEYS[i] is no key of a lock
--                   (see keyspace.lua); a read-write lock's hash is busy
--   error           "NOPERM ..." naming a write command the ACL denies
--
-- Nothing is written before every key has been checked.
-- Globals cost a script a lookup in the globals table each (about 120
-- instructions): the common path reads them through locals.
local redis, KEYS, ARGV = redis, KEYS, ARGV
local info = KEYS[3]
if not info and (ARGV[4] or '') == '' then
  -- The common path: a free name (EXISTS counts neither the hash nor, but
  -- for the last-token key, anything else), no latch, no holder record.
  -- It is lib.lua's grant_free written out (see there why each step is
  -- safe): a helper's call costs the server about 1k instructions per
  -- script call, and rlock's pair is the one measured against Redisson's.
  local lock, token_key = KEYS[1], KEYS[2]
  local exists = redis.call('exists', lock, token_key)
  local last = exists == 1 and redis.pcall('get', token_key)
  if (exists == 0 or (type(last) == 'string' and string.match(last, '^[1-9]%d*$')
      and redis.call('pttl', token_key) > 0))
      and not (redis.acl_check_cmd and not redis.acl_check_cmd('pexpire', lock)) then
    local now = redis.call('time') -- server time in µs, in decimal:
    local t = #now[2] == 6 and now[1] .. now[2] or now[1] .. string.sub('00000' .. now[2], -6)
    if last and (#t < #last or (#t == #last and t <= last)) then -- t <= last
      t = string.format('%.0f', tonumber(last) + 1)
    end
    if redis.pcall('hset', lock, ARGV[2], '1', 'redisync:token', t) == 2 then -- else an error: denied
      redis.call('pexpire', lock, ARGV[1])
      return t
    end
  end
end
-- Rare paths: the name is taken (whose, and by what?), or a holder record
-- is asked for.
local lease = tonumber(ARGV[1])
local shape = lock_shape(KEYS[1])
if shape == 'none' then
  local refusal = check_own({{2, 'string', TOKEN}}) or (info and info_refusal(3))
    or permitted({{'hset', KEYS[1]}, {'pexpire', KEYS[1]}})
  if refusal then
    return refusal
  end
  local res = grant(KEYS[1], ARGV[2], lease, KEYS[2])
  if info then
    info_record(info, ARGV[2], ARGV[6], lease, true)
  end
  return latch_granted(KEYS[1], ARGV[4], ARGV[5], res)
end
if shape ~= 'lock' and shape ~= 'rwlock' then
  return wrong_kind(1, shape)
end
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
local latch, req = ARGV[4], ARGV[5]
if latch_refuses(KEYS[1], latch, req) then
  return redis.call('pttl', KEYS[1])
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local res = reenter(KEYS[1], ARGV[2], lease, ARGV[3], KEYS[2])
  if info and type(res) == 'table' and res.err == nil then
    info_record(info, ARGV[2], ARGV[6], lease, false)
  end
  return latch_granted(KEYS[1], latch, req, res)
end
return redis.call('pttl', KEYS[1])

#!lua
-- rwlock_write_acquire: take or re-enter the write hold. Runs with lib.lua
-- prepended.
--
-- KEYS[1]  lock hash (see rwlock_read_acquire.lua)
-- KEYS[2]  last-token key
-- KEYS[3]  waiting writers (zset: "<owner>:write" -> deadline, server ms)
-- KEYS[4]  phase key: the token of the lock's current phase (rwlock_lib.lua)
-- KEYS[5]  holder-info hash (keyspace.lua: info_record), optional: field
--          "<owner>:write" records who took the write hold
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  "<owner>:write" (the write field)
-- ARGV[3]  owner id (the read field; absent: ARGV[2] without ":write")
-- ARGV[4]  "1" for a non-reentrant lock, "0" or absent otherwise
-- ARGV[5]  waiter timeout in ms: when > 0 and the lock is busy, the writer
--          registers (or refreshes) itself as waiting until now + this, so
--          new readers queue behind it (writer preference); "0" or absent:
--          do not
-- ARGV[6]  holder-info payload to record for the write hold ("": none)
--
-- Reply: {token, count} acquired (the token alone, in decimal, on the
-- common path: count 1); the hash's PTTL when busy; error
-- NON_REENTRANT; error UPGRADE when the owner holds read holds but not the
-- write hold (it would wait for itself forever).
--
-- Keys of another shape (keyspace.lua): an rlock's or fair lock's hash is
-- busy; anything else, including a hash without "mode" that is no lock, is
-- WRONGKIND, never free. NOPERM names a write the ACL denies. Nothing is
-- written before every key has been checked.
-- Globals cost a lookup each (about 120 instructions): read through locals.
local redis, KEYS, ARGV = redis, KEYS, ARGV
if not KEYS[5] then
  -- The common path: a free name nobody waits for. EXISTS counts neither
  -- the hash, the waiting writers nor the phase key and, but for the
  -- last-token key (a decimal with an expiry, what check_own accepts, in
  -- canonical form, as lib.lua's grant_free compares it), nothing else. The hash (the first write) needs no ACL check, its
  -- PEXPIRE and the phase key's SET one each; the phase key is written as
  -- phase_set does. It calls no helper: anything else falls through to the
  -- rare paths, before any write.
  local e = redis.call('exists', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  local last = e == 1 and redis.pcall('get', KEYS[2])
  if (e == 0 or (type(last) == 'string' and string.match(last, '^[1-9]%d*$') and redis.call('pttl', KEYS[2]) > 0))
      and (not redis.acl_check_cmd or (redis.acl_check_cmd('pexpire', KEYS[1]) and redis.acl_check_cmd('set', KEYS[4]))) then
    local now = redis.call('time') -- server time in µs, in decimal:
    local t = #now[2] == 6 and now[1] .. now[2] or now[1] .. string.sub('00000' .. now[2], -6)
    if last and (#t < #last or (#t == #last and t <= last)) then -- t <= last
      t = string.format('%.0f', tonumber(last) + 1)
    end
    if type(redis.pcall('hset', KEYS[1], 'mode', 'write', ARGV[2], '1')) == 'number' then
      redis.call('pexpire', KEYS[1], ARGV[1])
      redis.call('set', KEYS[4], t .. ' w ' .. ARGV[2], 'px', ARGV[1])
      return t
    end
  end
end
-- Rare paths: a lock held or waited for, a holder record, keys of another
-- shape.
local owner = ARGV[3] or string.sub(ARGV[2], 1, -7) -- the read field: the write field without ":write"
local shape = lock_shape(KEYS[1])
if shape ~= 'none' and shape ~= 'lock' and shape ~= 'rwlock' then
  return wrong_kind(1, shape)
end
if shape == 'lock' or hold_count(KEYS[1], ARGV[2]) == nil or hold_count(KEYS[1], owner) == nil then
  return redis.call('pttl', KEYS[1])
end
do
  local refusal = check_own({{2, 'string', TOKEN}, {3, 'zset'}, {4, 'string', RW_PHASE}})
    or permitted({{'hset', KEYS[1]}, {'hincrby', KEYS[1]}, {'pexpire', KEYS[1]},
      {'zadd', KEYS[3]}, {'zrem', KEYS[3]}, {'pexpire', KEYS[3]}, {'set', KEYS[4]}, {'pexpire', KEYS[4]}})
    or (KEYS[5] and info_refusal(5))
  if refusal then
    return refusal
  end
end
local lease = tonumber(ARGV[1])
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
  local token = phase_next(KEYS[2], KEYS[4])
  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
  redis.call('pexpire', KEYS[1], lease)
  phase_set(KEYS[1], KEYS[4], token, 'w ' .. ARGV[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  if KEYS[5] then
    info_record(KEYS[5], ARGV[2], ARGV[6], lease, true)
  end
  return {token, 1}
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  if ARGV[4] == '1' then
    return redis.error_reply('NON_REENTRANT lock already held by this owner')
  end
  local token = phase_token(KEYS[1], KEYS[4], 'write')
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  extend(KEYS[1], lease)
  if token then
    phase_follow(KEYS[1], KEYS[4])
  else
    -- Re-entering a write hold a Redisson client began (same owner id): it
    -- has no token yet, so this hold draws one, a real fencing token.
    token = phase_next(KEYS[2], KEYS[4])
    phase_set(KEYS[1], KEYS[4], token, 'w ' .. ARGV[2])
  end
  if KEYS[5] then
    info_record(KEYS[5], ARGV[2], ARGV[6], lease, false)
  end
  return {token, count}
end
if redis.call('hexists', KEYS[1], owner) == 1 then
  return redis.error_reply('UPGRADE owner holds read holds but not the write hold')
end
local wait = tonumber(ARGV[5] or '0')
if wait > 0 then
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('zadd', KEYS[3], now + wait, ARGV[2])
  expire_at_least(KEYS[3], wait)
end
return redis.call('pttl', KEYS[1])

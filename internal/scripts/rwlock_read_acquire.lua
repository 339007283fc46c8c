#!lua
-- rwlock_read_acquire: take or re-enter a read hold (Redisson RReadWriteLock
-- layout). Runs with lib.lua prepended.
--
-- KEYS[1]  lock hash: "mode" = "read" | "write", "<owner>" = read count,
--          "<owner>:write" = write count (exactly Redisson's layout)
-- KEYS[2]  this owner's timeout-key prefix "{name}:<owner>:rwlock_timeout";
--          read hold n has the string key "<prefix>:<n>" with its own lease
-- KEYS[3]  last-token key
-- KEYS[4]  waiting writers (zset: "<owner>:write" -> heartbeat deadline in
--          server ms), filled only by writers with writer preference
-- KEYS[5]  phase key: the token of the lock's current phase (rwlock_lib.lua)
-- KEYS[6]  holder-info hash (keyspace.lua: info_record), optional: field
--          "<owner>" records who took this owner's read holds
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner id (the read field)
-- ARGV[3]  "<owner>:write" (the owner's write field; absent: that)
-- ARGV[4]  "1" for a non-reentrant lock, "0" or absent otherwise
-- ARGV[5]  holder-info payload to record for this owner's reads ("": none)
--
-- Reply: {token, count} acquired (token: the read phase's token, see the
-- rwlock package doc; the token alone, in decimal, on the common path:
-- count 1); an integer wait hint in ms when busy (-1: the hash has
-- no expiry); error NON_REENTRANT.
--
-- Readers share the lock while mode is "read" (or the hash is absent), unless
-- a writer with writer preference is waiting; a reader that already holds a
-- read hold always re-enters (it would otherwise wait for itself). The write
-- holder may also take read holds (write-to-read reentry).
--
-- Keys of another shape (keyspace.lua): an rlock's or fair lock's hash is
-- busy (kinds exclude each other by the hash); anything else, including a
-- hash without "mode" that is no lock, is WRONGKIND, never free. NOPERM
-- names a write the ACL denies. Nothing is written before every key has
-- been checked.
-- Globals cost a lookup each (about 120 instructions): read through locals.
local redis, KEYS, ARGV = redis, KEYS, ARGV
if not KEYS[6] then
  -- The common path: a free name nobody waits for. EXISTS counts neither
  -- the hash, the waiting writers, the phase key nor the first read hold's
  -- timeout key and, but for the last-token key (a decimal with an expiry,
  -- what check_own accepts, in canonical form, as lib.lua's grant_free
  -- compares it), nothing else. The hash (the first write)
  -- needs no ACL check, the writes after it one each; they write what the
  -- rare path's add_read and phase_set write. It calls no helper: anything
  -- else falls through to the rare paths, before any write.
  local hold = KEYS[2] .. ':1'
  local e = redis.call('exists', KEYS[1], KEYS[3], KEYS[4], KEYS[5], hold)
  local last = e == 1 and redis.pcall('get', KEYS[3])
  if (e == 0 or (type(last) == 'string' and string.match(last, '^[1-9]%d*$') and redis.call('pttl', KEYS[3]) > 0))
      and (not redis.acl_check_cmd or (redis.acl_check_cmd('set', hold) and redis.acl_check_cmd('pexpire', KEYS[1])
        and redis.acl_check_cmd('set', KEYS[5]))) then
    local now = redis.call('time') -- server time in µs, in decimal:
    local t = #now[2] == 6 and now[1] .. now[2] or now[1] .. string.sub('00000' .. now[2], -6)
    if last and (#t < #last or (#t == #last and t <= last)) then -- t <= last
      t = string.format('%.0f', tonumber(last) + 1)
    end
    if type(redis.pcall('hset', KEYS[1], 'mode', 'read', ARGV[2], '1')) == 'number' then
      redis.call('set', hold, '1', 'px', ARGV[1])
      redis.call('pexpire', KEYS[1], ARGV[1])
      redis.call('set', KEYS[5], t .. ' r', 'px', ARGV[1])
      return t
    end
  end
end
-- Rare paths: a lock held or waited for, a holder record, keys of another
-- shape.
local write_field = ARGV[3] or ARGV[2] .. ':write'
local shape = lock_shape(KEYS[1])
if shape ~= 'none' and shape ~= 'lock' and shape ~= 'rwlock' then
  return wrong_kind(1, shape)
end
local reads, writes = hold_count(KEYS[1], ARGV[2]), hold_count(KEYS[1], write_field)
if shape == 'lock' or reads == nil or writes == nil then
  return redis.call('pttl', KEYS[1])
end
do
  local next_hold = KEYS[2] .. ':' .. (reads + 1)
  local found = foreign(next_hold, 'string', READ_HOLD)
  local refusal = check_own({{3, 'string', TOKEN}, {4, 'zset'}, {5, 'string', RW_PHASE}})
    or (found and wrong_kind(2, found .. ' at read hold ' .. (reads + 1)))
    or (shape == 'rwlock' and reads == 0 and writes == 0 and not lock_fields(KEYS[1])
      and wrong_kind(1, 'a hash with fields no lock has'))
    or (KEYS[6] and info_refusal(6))
    or permitted({{'hset', KEYS[1]}, {'hincrby', KEYS[1]}, {'pexpire', KEYS[1]}, {'set', next_hold},
      {'zremrangebyscore', KEYS[4]}, {'set', KEYS[5]}, {'pexpire', KEYS[5]}})
  if refusal then
    return refusal
  end
end
local lease = tonumber(ARGV[1])
local mode = redis.call('hget', KEYS[1], 'mode')
local mine = redis.call('hexists', KEYS[1], ARGV[2]) == 1
if mine and ARGV[4] == '1' then
  return redis.error_reply('NON_REENTRANT lock already held by this owner')
end

-- The soonest deadline of a live waiting writer, or nil when none waits.
local function waiting_writer()
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('zremrangebyscore', KEYS[4], '-inf', now)
  local first = redis.call('zrange', KEYS[4], 0, 0, 'withscores')
  if first[2] == nil then
    return nil
  end
  return math.max(1, tonumber(first[2]) - now)
end

local fresh = mode == false
local function add_read()
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', lease)
  expire_at_least(KEYS[1], lease)
  if KEYS[6] then
    info_record(KEYS[6], ARGV[2], ARGV[5], lease, fresh)
  end
  return n
end

if mode == 'write' then
  if redis.call('hexists', KEYS[1], write_field) == 1 then
    -- Reads under one's own write hold carry the write's token; a write
    -- hold a Redisson client began has none yet: it gets one now.
    local token = phase_token(KEYS[1], KEYS[5], 'write')
    local n = add_read()
    if token then
      phase_follow(KEYS[1], KEYS[5])
    else
      token = phase_next(KEYS[3], KEYS[5])
      phase_set(KEYS[1], KEYS[5], token, 'w ' .. write_field)
    end
    return {token, n}
  end
  return redis.call('pttl', KEYS[1])
end
if not mine then
  local wait = waiting_writer()
  if wait then
    if mode then
      return redis.call('pttl', KEYS[1])
    end
    return wait
  end
end
local token = mode and phase_token(KEYS[1], KEYS[5], 'read')
if not mode then
  redis.call('hset', KEYS[1], 'mode', 'read')
end
local n = add_read()
if token then
  phase_follow(KEYS[1], KEYS[5])
else
  -- A new read phase (or one a Redisson client began, which keeps no token).
  token = phase_next(KEYS[3], KEYS[5])
  phase_set(KEYS[1], KEYS[5], token, 'r')
end
return {token, n}

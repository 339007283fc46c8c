-- keyspace: how a script tells its own keys from anything else (issue 13).
-- Locks share Redis with users' data, and kinds share names: every script
-- reads and checks each key it may write before its first write, treats a
-- key of another shape as held by someone else or answers WRONGKIND, and
-- never treats it as free. The Go side prepends this file (after lib.lua)
-- to every script.

-- The reply for KEYS[i] holding found (a description of it); the Go side
-- turns it into a *redisync.WrongKindError naming the key.
local function wrong_kind(i, found)
  return redis.error_reply('WRONGKIND ' .. i .. ' ' .. found)
end

-- What the hash at key is for rlock, fairlock and rwlock, which share
-- Redisson's lock hash: 'none'; 'lock' (RLock's layout: a hash with an
-- expiry and no "mode" field); 'rwlock' (RReadWriteLock's: "mode" is
-- "read" or "write"); else a description of what is there, which is no
-- lock. Every lock hash has an expiry, so a hash without one is a user's,
-- or a semaphore's configuration.
local function lock_shape(key)
  local t = redis.call('type', key).ok
  if t == 'none' then
    return 'none'
  end
  if t ~= 'hash' then
    return 'a ' .. t
  end
  if redis.call('pttl', key) < 0 then
    if redis.call('hexists', key, 'capacity') == 1 then
      return "a semaphore's configuration"
    end
    return 'a hash without expiry'
  end
  local mode = redis.call('hget', key, 'mode')
  if not mode then
    return 'lock'
  end
  if mode == 'read' or mode == 'write' then
    return 'rwlock'
  end
  return 'a hash whose mode is neither read nor write'
end

-- Whether every field of the hash at key is a lock's: a hold count (a
-- positive integer) under an owner's field, a field of ours
-- ("redisync:..."), or the rwlock's "mode". lock_shape costs O(1); this
-- reads the whole hash, so it guards only what adds a field to a hash
-- others hold (a reader joining) and the operators' deletes.
local function lock_fields(key)
  local fields = redis.call('hgetall', key)
  for i = 1, #fields, 2 do
    local f = fields[i]
    if f ~= 'mode' and string.sub(f, 1, 9) ~= 'redisync:' and not string.match(fields[i + 1], '^[1-9]%d*$') then
      return false
    end
  end
  return true
end

-- The hold count of field in the lock hash at key (0 when absent), or nil
-- when the field holds no count (no lock of ours wrote it).
local function hold_count(key, field)
  local v = redis.call('hget', key, field)
  if not v then
    return 0
  end
  if not string.match(v, '^[1-9]%d*$') then
    return nil
  end
  return tonumber(v)
end

-- nil when key is absent or holds what a key of ours of type want holds:
-- every key of ours has an expiry, and a string of ours matches pattern;
-- else a description of what is there.
local function foreign(key, want, pattern)
  local t = redis.call('type', key).ok
  if t == 'none' then
    return nil
  end
  if t ~= want then
    return 'a ' .. t
  end
  if redis.call('pttl', key) == -1 then
    return 'a ' .. t .. ' without expiry'
  end
  if pattern and not string.match(redis.call('get', key), pattern) then
    return 'a string that is not ours'
  end
  return nil
end

-- The WRONGKIND reply for the first of specs {i, type, pattern} whose
-- KEYS[i] is foreign, or nil.
local function check_own(specs)
  for _, s in ipairs(specs) do
    local found = foreign(KEYS[s[1]], s[2], s[3])
    if found then
      return wrong_kind(s[1], found)
    end
  end
  return nil
end

-- Patterns of our strings: a last-token key holds a decimal token, a
-- read hold's timeout key "1".
local TOKEN = '^%d+$'
local READ_HOLD = '^1$'

-- What the semaphore configuration hash at key is: 'none', 'semaphore'
-- (fields "capacity", a count up to MAX_CAPACITY, and "token"; no expiry),
-- or a description of what is there. A capacity above that is no
-- configuration of ours (Lua would round it, and Capacity could not return
-- it exactly).
local MAX_CAPACITY = 1e15
local function sem_shape(key)
  local t = redis.call('type', key).ok
  if t == 'none' then
    return 'none'
  end
  if t ~= 'hash' then
    return 'a ' .. t
  end
  if redis.call('pttl', key) >= 0 then
    return 'a lock'
  end
  local cap = redis.call('hget', key, 'capacity')
  if not cap then
    return 'a hash without capacity'
  end
  if not string.match(cap, '^%d+$') or #cap > 16 or tonumber(cap) > MAX_CAPACITY then
    return 'a capacity that is no count up to 10^15'
  end
  local token = redis.call('hget', key, 'token')
  if token and not string.match(token, TOKEN) then
    return 'a token that is no number'
  end
  return 'semaphore'
end

-- The reply for a write command cmd the ACL denies.
local function noperm(cmd)
  return redis.error_reply('NOPERM redisync: this user may not run ' .. string.upper(cmd) ..
    ' on a key the lock needs (see the README: Permissions)')
end

-- Before its first write a script makes sure the user may run every write
-- it may make, so that an ACL denying one leaves nothing half-done behind
-- (Redis does not roll a script back) and the error names the command.
-- redis.acl_check_cmd costs about 0.3 µs a check (BenchmarkACLCheckCmd).
-- The rare paths check every write they may make with this; the common
-- paths check inline only the writes after their first (a denied first
-- write has nothing before it to leave half-done: the script then falls
-- through to its rare paths, which answer NOPERM naming it). Each check is
-- {command, key} ({command} for INFO).
local function permitted(checks)
  if not redis.acl_check_cmd then -- before Redis 7
    return nil
  end
  for _, c in ipairs(checks) do
    if not redis.acl_check_cmd(unpack(c)) then
      return noperm(c[1])
    end
  end
  return nil
end

-- The semaphore scripts' checks before their first write: WRONGKIND for
-- a holders zset, permits hash, queue or heartbeat zset (KEYS[h..h+3]: h
-- is 2 after the configuration, 1 for the release, which has none) of
-- another shape, or NOPERM for a write to them the ACL denies (what
-- reclaiming, queueing, granting and releasing may write), and with config
-- for the configuration's (KEYS[1]) HSETNX and HSET too; nil when all pass.
local function sem_refusal(h, config)
  local holders, permits, queue, heartbeats = KEYS[h], KEYS[h + 1], KEYS[h + 2], KEYS[h + 3]
  local checks = {{'zadd', holders}, {'zrem', holders}, {'zremrangebyscore', holders}, {'pexpire', holders},
    {'del', holders}, {'hset', permits}, {'hdel', permits}, {'hincrby', permits}, {'pexpire', permits},
    {'del', permits}, {'zadd', queue}, {'zrem', queue}, {'pexpire', queue}, {'zadd', heartbeats},
    {'zrem', heartbeats}, {'zremrangebyscore', heartbeats}, {'pexpire', heartbeats},
    -- and the reads that come after the first write (reclaiming, the
    -- expiry kept at least, the queue's head): a denied one would leave
    -- that write behind
    {'zrangebyscore', holders}, {'zrangebyscore', heartbeats}, {'zrange', holders}, {'zrange', queue},
    {'zcard', queue}, {'hget', permits}, {'pttl', holders}, {'pttl', permits}}
  if config then
    table.insert(checks, 1, {'hset', KEYS[1]})
    table.insert(checks, 1, {'hsetnx', KEYS[1]})
    table.insert(checks, 1, {'hget', KEYS[1]})
  end
  return check_own({{h, 'zset'}, {h + 1, 'hash'}, {h + 2, 'zset'}, {h + 3, 'zset'}}) or permitted(checks)
end

-- Holder metadata (redisync.HolderInfo): a hash beside the lock, in its
-- slot, field = the hold's owner field (a semaphore's permit id), value
-- "1|<server time in ms when the hold began>|<payload from the client>".
-- Nothing of it lives in the lock's own keys, so Redisson's layout is
-- untouched. A Client that records none passes no such key (Redis refuses
-- a script whose KEYS the user's ACL does not cover). It never costs a
-- hold: foreign data there (a string, a hash without expiry) is left alone
-- by every script — the acquire takes the lock and records nothing,
-- releases, renewals and force-unlocks do not touch it — and so is a key
-- where the ACL denies one of the commands a script would run on it.
-- (Refusing the acquire would let one SET of the side key lock the name
-- out for good.)
local INFO_MAX = 2048

-- Whether this user may run every write on the holder-info hash at key
-- (an ACL may allow the key but deny a command).
local function info_allowed(key)
  if not redis.acl_check_cmd then -- before Redis 7
    return true
  end
  for _, cmd in ipairs({'hset', 'hdel', 'del', 'pexpire'}) do
    if not redis.acl_check_cmd(cmd, key) then
      return false
    end
  end
  return true
end

-- Whether key is absent or a holder-info hash of ours that may be written.
-- A yes is remembered for the rest of the call (only our own writes follow).
local info_checked = {}
local function info_ours(key)
  if info_checked[key] then
    return true
  end
  local ok = info_allowed(key) and foreign(key, 'hash') == nil
  info_checked[key] = ok
  return ok
end

-- For acquire scripts, among their checks: nil, always (foreign data in
-- KEYS[i], the holder-info hash, costs no hold: info_record then writes
-- nothing there). It checks the key before the script's first write, so
-- that what the script itself writes later cannot change the verdict.
local function info_refusal(i)
  info_ours(KEYS[i])
  return nil
end

-- Record payload for owner's hold (after the acquire's checks). fresh: the
-- lock was free, so every record there is a former holder's and goes. A
-- nested hold keeps its first record (and start). The hash lives at least
-- the lease; renewals extend it with the hold.
local function info_record(key, owner, payload, lease, fresh)
  if not info_ours(key) then
    return
  end
  if fresh then
    redis.call('del', key)
  end
  if payload == nil or payload == '' or #payload > INFO_MAX then
    return
  end
  if redis.call('hexists', key, owner) == 0 then
    redis.call('hset', key, owner, '1|' .. string.format('%.0f', math.floor(now_us() / 1000)) .. '|' .. payload)
  end
  expire_at_least(key, lease)
end

-- Forget owner's record (its hold count reached zero), or every record
-- (all: the lock itself is gone).
local function info_drop(key, owner, all)
  if not info_ours(key) then
    return
  end
  if all then
    redis.call('del', key)
  else
    redis.call('hdel', key, owner)
  end
end

-- For renewal scripts: the records live at least as long as the hold just
-- renewed (never shortened, never created).
local function info_extend(key, lease)
  if info_ours(key) then
    extend(key, lease)
  end
end

-- For the semaphore: forget the records of holders whose lease ran out
-- (before reclaim takes their permits back).
local function info_forget_expired(key, holders, now_ms)
  if redis.call('type', holders).ok ~= 'zset' or not info_ours(key) then
    return
  end
  for _, id in ipairs(redis.call('zrangebyscore', holders, '-inf', now_ms)) do
    redis.call('hdel', key, id)
  end
end

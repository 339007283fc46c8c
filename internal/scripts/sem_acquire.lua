#!lua
-- sem_acquire: take n leased permits, or queue for them (FIFO). Runs with
-- lib.lua prepended.
--
-- KEYS[1]  semaphore hash, named by the raw name: "capacity", "token" (the
--          last fencing token issued); no expiry (it is the configuration)
-- KEYS[2]  holders zset: permit id -> lease expiry (server time, ms)
-- KEYS[3]  permits hash: permit id -> permit count, "used" -> their sum
-- KEYS[4]  queue zset: waiting permit id -> arrival (server µs); waiter W
--          listens on "<channel prefix>:W" (lib.lua's sem_channel of it)
-- KEYS[5]  heartbeat zset: waiting permit id -> deadline (server ms)
-- KEYS[6]  holder-info hash, optional: permit id -> who took it
--          (keyspace.lua: info_record)
-- ARGV[1]  capacity to set if the semaphore has none yet
-- ARGV[2]  permit id (unique per acquisition)
-- ARGV[3]  the holders zset's and permits hash's expiry in ms: SEM_HORIZON
--          leases (sem.go's SemHorizonMs), made once by the caller; the
--          lease is a SEM_HORIZON-th of it
-- ARGV[4]  waiter timeout in ms; "0" or absent: one attempt, never queue
-- ARGV[5]  n, the permits wanted (>= 1); absent: 1
-- ARGV[6]  "publish" or "spublish" (absent: "publish")
-- ARGV[7]  holder-info payload to record for the permit ("" or absent: none)
--
-- Each argument costs Redis about 1.5k instructions (a pair of ours about
-- 150k): what the common path needs comes first, and the caller leaves out
-- the trailing ones that have their default.
--
-- Reply: {token, n} granted (the token alone, in decimal, on the common
-- path: one permit); when not, a wait hint in ms (until the first
-- holder's lease runs out, at least 1; -1 when no permit is held); error TOO_MANY when n exceeds the
-- capacity.
--
-- Fairness is strict FIFO, as golang.org/x/sync/semaphore: a request is
-- granted only when enough permits are free and nobody queued before it,
-- so a large request at the head holds back smaller ones behind it and is
-- never starved by them. Every call first takes back expired holders'
-- permits and drops dead waiters; when permits are free, the head is woken.
--
-- Keys of another shape (keyspace.lua) — a lock or a user's key at the
-- name, a capacity no semaphore of ours wrote — are WRONGKIND; NOPERM names
-- a write the ACL denies. Nothing is written before every key has been
-- checked.
-- Globals cost a lookup each (about 120 instructions): read through locals.
local redis, KEYS, ARGV, type = redis, KEYS, ARGV, type
if not KEYS[6] and not ARGV[5] then
  -- The common path: one permit of a semaphore nobody holds or waits for.
  -- EXISTS counts the semaphore's keys but the heartbeats (those of no
  -- queued waiter are nobody's): none (a new semaphore, whose
  -- capacity is New's, a decimal from 1 to MaxPermits as Go checked it),
  -- or one that is its configuration (a capacity with no expiry, as
  -- sem_shape accepts, whose last token, if any, is a decimal in canonical
  -- form, as lib.lua's grant_free compares it), so no holder needs taking
  -- back, no waiter dropping or waking. Its writes can only be denied by
  -- the ACL (the shebang refuses the script whole for memory): it checks
  -- ahead the one command that undoes them, DEL of the holders zset and
  -- permits hash, which it creates, writes those two first and the
  -- configuration last, and when one write is denied deletes the two again
  -- and falls through to the rare paths, which answer NOPERM naming it:
  -- nothing is left written (docs/guarantees.md, "Semaphore: ACL checks of
  -- the common acquire"). It calls no helper: anything else falls through
  -- to the rare paths, before any write, which check it all again and
  -- answer it.
  local e = redis.call('exists', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  local cap, last = e == 0 and ARGV[1], nil
  if e == 1 then
    local cfg = redis.pcall('hmget', KEYS[1], 'capacity', 'token')
    cap, last = cfg[1], cfg[2]
    if not (type(cap) == 'string' and string.match(cap, '^%d+$') and #cap <= 16 and tonumber(cap) <= 1e15 and tonumber(cap) >= 1
        and (not last or string.match(last, '^[1-9]%d*$')) and redis.call('pttl', KEYS[1]) == -1) then
      cap = nil
    end
  end
  local acl = redis.acl_check_cmd
  if cap and (not acl or acl('del', KEYS[2], KEYS[3])) then
    local now = redis.call('time') -- server time in µs, in decimal:
    local now_us = #now[2] == 6 and now[1] .. now[2] or now[1] .. string.sub('00000' .. now[2], -6)
    local t = now_us -- the token: now, or one more than the last one
    if last and (#t < #last or (#t == #last and t <= last)) then
      t = string.format('%.0f', tonumber(last) + 1)
    end
    local id, horizon = ARGV[2], ARGV[3]
    -- The lease's expiry in ms, now plus the lease: Lua's arithmetic
    -- reads the decimals without a call to tonumber, and the number goes
    -- as a string of %d (Redis 7.0 prints a number argument with a
    -- printf of 17 digits, which costs more).
    if type(redis.pcall('hset', KEYS[3], id, '1', 'used', '1')) == 'number'
        and type(redis.pcall('zadd', KEYS[2], string.format('%d', now_us / 1000 + horizon / SEM_HORIZON), id)) == 'number'
        and type(redis.pcall('pexpire', KEYS[2], horizon)) == 'number'
        and type(redis.pcall('pexpire', KEYS[3], horizon)) == 'number'
        and type(e == 0 and redis.pcall('hset', KEYS[1], 'capacity', cap, 'token', t)
          or redis.pcall('hset', KEYS[1], 'token', t)) == 'number' then
      return t
    end
    redis.call('del', KEYS[2], KEYS[3])
  end
end
-- Rare paths: more permits, holders or waiters to reckon with, a holder
-- record, or keys of another shape.
local shape = sem_shape(KEYS[1])
if shape ~= 'none' and shape ~= 'semaphore' then
  return wrong_kind(1, shape)
end
do
  local refusal = (KEYS[6] and info_refusal(6)) or sem_refusal(2, true)
  if refusal then
    return refusal
  end
end
local n, id, horizon, wait = tonumber(ARGV[5] or '1'), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4] or '0')
local lease = horizon / SEM_HORIZON
-- TIME before the first write: an ACL may deny it (it is only in @fast),
-- and a denied command after a write would leave that write behind.
local now = now_us()
local now_ms = math.floor(now / 1000)
redis.call('hsetnx', KEYS[1], 'capacity', ARGV[1])
local capacity = tonumber(redis.call('hget', KEYS[1], 'capacity'))
if n > capacity then
  return redis.error_reply('TOO_MANY ' .. n .. ' permits requested, capacity is ' .. capacity)
end
if KEYS[6] then
  info_forget_expired(KEYS[6], KEYS[2], now_ms)
end
local freed = reclaim(KEYS[2], KEYS[3], now_ms)
local dropped = drop_dead_waiters(KEYS[4], KEYS[5], now_ms)
local used = tonumber(redis.call('hget', KEYS[3], 'used') or '0')
local head = redis.call('zrange', KEYS[4], 0, 0)[1]
if capacity - used >= n and (head == nil or head == id) then
  if head == id then
    redis.call('zrem', KEYS[4], id)
    redis.call('zrem', KEYS[5], id)
  end
  local token = now
  local last = tonumber(redis.call('hget', KEYS[1], 'token') or '0')
  if last >= token then
    token = last + 1
  end
  redis.call('hset', KEYS[3], id, n)
  used = redis.call('hincrby', KEYS[3], 'used', n)
  redis.call('zadd', KEYS[2], now_ms + lease, id)
  expire_at_least(KEYS[2], horizon)
  expire_at_least(KEYS[3], horizon)
  redis.call('hset', KEYS[1], 'token', string.format('%.0f', token))
  if KEYS[6] then
    info_record(KEYS[6], id, ARGV[7], lease, false)
  end
  if capacity - used > 0 then
    wake_head(KEYS[4], sem_channel(KEYS[4]), ARGV[6] or 'publish') -- the next in line may fit too
  end
  return {token, n}
end
if (freed > 0 or dropped) and capacity - used > 0 then
  wake_head(KEYS[4], sem_channel(KEYS[4]), ARGV[6] or 'publish')
end
if wait > 0 then
  join_queue(KEYS[4], KEYS[5], id, now, now_ms, wait)
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[2] then
  return math.max(1, tonumber(first[2]) - now_ms)
end
return -1

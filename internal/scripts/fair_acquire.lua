#!lua
-- fair_acquire: take, re-enter, or queue for a fair (FIFO) lock. Runs with
-- lib.lua prepended.
--
-- KEYS[1]  lock hash (the rlock layout: <owner> = hold count,
--          "redisync:token" = fencing token)
-- KEYS[2]  queue: zset owner -> arrival (server time in µs; ties broken so
--          that arrivals strictly increase)
-- KEYS[3]  heartbeats: zset owner -> deadline (server time in ms); a waiter
--          whose deadline passes is dropped from both zsets
-- KEYS[4]  last-token key
-- KEYS[5]  waiter channel prefix; waiter O listens on "<prefix>:O"
-- KEYS[6]  holder-info hash (keyspace.lua: info_record), optional
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner id
-- ARGV[3]  "1" for a non-reentrant lock, "0" otherwise
-- ARGV[4]  waiter timeout in ms; "0" for TryLock: never enqueue
-- ARGV[5]  "publish" or "spublish"
-- ARGV[6]  the handle's latch field, "" or absent for none, and ARGV[7] the
--          request id, as in rlock_acquire.lua
-- ARGV[8]  holder-info payload to record for this owner ("": none)
--
-- Reply: {token, count} acquired (the token alone, in decimal, on the
-- common path: count 1); when busy, a wait hint in ms: the lock's
-- PTTL while it is held, or the time until the head's heartbeat deadline
-- while the lock is free but another waiter is first in line (-1: the hash
-- has no expiry); error NON_REENTRANT.
--
-- The lock is granted only to the queue's head, or to anyone while the queue
-- is empty, or to its owner (re-entry); a grant takes the owner's place in
-- the queue. Every call (acquire, release, leave) first drops dead waiters;
-- when that makes someone else head of a free lock, that waiter is woken.
--
-- Keys of another shape (keyspace.lua): WRONGKIND, or busy for a
-- read-write lock's hash; NOPERM names a write the ACL denies. Nothing is
-- written before every key has been checked.
-- Globals cost a script a lookup in the globals table each (about 120
-- instructions): the script reads them through locals.
local redis, KEYS, ARGV = redis, KEYS, ARGV
if not KEYS[6] and (ARGV[6] or '') == '' then
  -- The common path: a free lock nobody waits for (EXISTS counts neither
  -- the hash nor the queue's zsets and, but for the last-token key,
  -- nothing else), no latch, no holder record (lib.lua grant_free).
  local t = grant_free(redis.call('exists', KEYS[1], KEYS[2], KEYS[3], KEYS[4]), KEYS[1], KEYS[4], ARGV[2], ARGV[1])
  if t then
    return t
  end
end
-- Rare paths: a lock held or waited for, a latch, a holder record, keys of
-- another shape.
local shape = lock_shape(KEYS[1])
if shape ~= 'none' and shape ~= 'lock' and shape ~= 'rwlock' then
  return wrong_kind(1, shape)
end
local info = KEYS[6]
local refusal = check_own({{2, 'zset'}, {3, 'zset'}, {4, 'string', TOKEN}}) or (info and info_refusal(6))
  or permitted({{'hset', KEYS[1]}, {'hincrby', KEYS[1]}, {'pexpire', KEYS[1]}, {'del', KEYS[1]}, {'set', KEYS[4]},
    {'zadd', KEYS[2]}, {'zrem', KEYS[2]}, {'pexpire', KEYS[2]},
    {'zadd', KEYS[3]}, {'zrem', KEYS[3]}, {'zremrangebyscore', KEYS[3]}, {'pexpire', KEYS[3]}})
if refusal then
  return refusal
end
if shape == 'rwlock' or hold_count(KEYS[1], ARGV[2]) == nil then
  return redis.call('pttl', KEYS[1])
end
local owner = ARGV[2]
local lease = tonumber(ARGV[1])
local wait = tonumber(ARGV[4])
local now = now_us()
local now_ms = math.floor(now / 1000)

local purged = drop_dead_waiters(KEYS[2], KEYS[3], now_ms)
local latch, req = ARGV[6], ARGV[7]
if latch_refuses(KEYS[1], latch, req) then
  return math.max(1, redis.call('pttl', KEYS[1]))
end

-- A grant records who took it (keyspace.lua), in this call.
local function recorded(res, fresh)
  if info and type(res) == 'table' and res.err == nil then
    info_record(info, owner, ARGV[8], lease, fresh)
  end
  return res
end
if redis.call('hexists', KEYS[1], owner) == 1 then
  local res = reenter(KEYS[1], owner, lease, ARGV[3], KEYS[4])
  if res.err == nil and redis.call('zrem', KEYS[2], owner) == 1 then
    -- Granted while queued (another handle of the owner took the lock
    -- first): the owner's place goes, as with a grant at the head.
    redis.call('zrem', KEYS[3], owner)
  end
  return latch_granted(KEYS[1], latch, req, recorded(res, false))
end
local free = redis.call('exists', KEYS[1]) == 0
local head = redis.call('zrange', KEYS[2], 0, 0)[1]
if free and (head == nil or head == owner) then
  if head == owner then
    redis.call('zrem', KEYS[2], owner)
    redis.call('zrem', KEYS[3], owner)
  end
  return latch_granted(KEYS[1], latch, req, recorded(grant(KEYS[1], owner, lease, KEYS[4]), true))
end
if free and purged then
  wake_head(KEYS[2], KEYS[5], ARGV[5])
end
if wait == 0 then
  if free then
    return 1
  end
  return redis.call('pttl', KEYS[1])
end
join_queue(KEYS[2], KEYS[3], owner, now, now_ms, wait)
if not free then
  return redis.call('pttl', KEYS[1])
end
-- Free, but another live waiter is first: check again when its heartbeat
-- would run out (it normally takes the lock long before).
local deadline = tonumber(redis.call('zscore', KEYS[3], head) or now_ms)
return math.max(1, deadline - now_ms)

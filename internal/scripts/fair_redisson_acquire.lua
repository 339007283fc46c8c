#!lua
-- fair_redisson_acquire: take, re-enter, or queue for a fair lock in
-- Redisson's RFairLock queue (fair_redisson_lib.lua). Runs with lib.lua,
-- keyspace.lua and fair_redisson_lib.lua prepended.
--
-- KEYS[1]  lock hash (the rlock layout)
-- KEYS[2]  queue list "redisson_lock_queue:{N}"
-- KEYS[3]  deadline zset "redisson_lock_timeout:{N}"
-- KEYS[4]  last-token key
-- KEYS[5]  waiter channel prefix "redisson_lock__channel:{N}"
-- KEYS[6]  holder-info hash (keyspace.lua: info_record), optional
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner id
-- ARGV[3]  "1" for a non-reentrant lock, "0" otherwise
-- ARGV[4]  "1" to queue when busy, "0" (TryLock) never to queue
-- ARGV[5]  "publish" or "spublish"
-- ARGV[6]  the handle's latch field and ARGV[7] the request id, as in
--          rlock_acquire.lua
-- ARGV[8]  holder-info payload ("": none)
-- ARGV[9]  the queue's thread wait time in ms (Redisson's threadWaitTime)
--
-- Reply: {token, count} acquired (the token alone, in decimal, on the
-- common path: count 1); a wait hint in ms when busy; error
-- NON_REENTRANT. The lock is granted to the queue's head, or to anyone while
-- the queue is empty, as Redisson's script does, or to its owner
-- (re-entry); a grant takes the owner's place in the queue.
if not KEYS[6] and (ARGV[6] or '') == '' then
  -- The common path: a free lock nobody waits for (EXISTS counts neither
  -- the hash nor Redisson's queue and deadlines and, but for the
  -- last-token key, nothing else), no latch, no holder record (lib.lua
  -- grant_free).
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
do
  local refusal = typed(2, 'list') or typed(3, 'zset') or check_own({{4, 'string', TOKEN}})
    or (info and info_refusal(6))
    or permitted({{'hset', KEYS[1]}, {'hincrby', KEYS[1]}, {'pexpire', KEYS[1]},
      {'lpop', KEYS[2]}, {'rpush', KEYS[2]}, {'lrem', KEYS[2]}, {'zadd', KEYS[3]}, {'zrem', KEYS[3]}, {'zincrby', KEYS[3]}})
  if refusal then
    return refusal
  end
end
if shape == 'rwlock' or hold_count(KEYS[1], ARGV[2]) == nil then
  return redis.call('pttl', KEYS[1])
end
local owner, lease, wait = ARGV[2], tonumber(ARGV[1]), tonumber(ARGV[9])
local now = now_ms()
local purged = purge_heads(KEYS[2], KEYS[3], now)
local latch, req = ARGV[6], ARGV[7]
if latch_refuses(KEYS[1], latch, req) then
  return math.max(1, redis.call('pttl', KEYS[1]))
end
local function recorded(res, fresh)
  if info and type(res) == 'table' and res.err == nil then
    info_record(info, owner, ARGV[8], lease, fresh)
  end
  return res
end
if redis.call('hexists', KEYS[1], owner) == 1 then
  local res = reenter(KEYS[1], owner, lease, ARGV[3], KEYS[4])
  if res.err == nil and redis.call('zscore', KEYS[3], owner) then
    -- Granted while queued (another handle of the owner took the lock
    -- first): the owner's place goes, as with a grant at the head.
    leave_queue(KEYS[2], KEYS[3], owner, wait)
  end
  return latch_granted(KEYS[1], latch, req, recorded(res, false))
end
local free = redis.call('exists', KEYS[1]) == 0
local head = redis.call('lindex', KEYS[2], 0)
if free and (not head or head == owner) then
  if head == owner then
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], owner)
    move_up(KEYS[2], KEYS[3], 0, wait)
  end
  return latch_granted(KEYS[1], latch, req, recorded(grant(KEYS[1], owner, lease, KEYS[4]), true))
end
if free and purged then
  wake_redisson_head(KEYS[2], KEYS[5], ARGV[5])
end
if ARGV[4] == '0' then
  return free and 1 or redis.call('pttl', KEYS[1])
end
local mine = redis.call('zscore', KEYS[3], owner)
if not mine then
  -- Join at the tail with Redisson's deadline.
  local last = redis.call('lindex', KEYS[2], -1)
  local base = redis.call('pttl', KEYS[1])
  if last and last ~= owner then
    base = (tonumber(redis.call('zscore', KEYS[3], last)) or now) - now
  end
  if redis.call('zadd', KEYS[3], base + wait + now, owner) == 1 then
    redis.call('rpush', KEYS[2], owner)
  end
end
if not free then
  return math.max(1, redis.call('pttl', KEYS[1]))
end
-- Free, but another waiter heads the queue: check again by its deadline.
local deadline = tonumber(redis.call('zscore', KEYS[3], head)) or now
return math.max(1, deadline - now)

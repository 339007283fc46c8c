#!lua
-- sem_acquire: take n leased permits, or queue for them (FIFO). Runs with
-- lib.lua prepended.
--
-- KEYS[1]  semaphore hash, named by the raw name: "capacity", "token" (the
--          last fencing token issued); no expiry (it is the configuration)
-- KEYS[2]  holders zset: permit id -> lease expiry (server time, ms)
-- KEYS[3]  permits hash: permit id -> permit count, "used" -> their sum
-- KEYS[4]  queue zset: waiting permit id -> arrival (server µs)
-- KEYS[5]  heartbeat zset: waiting permit id -> deadline (server ms)
-- KEYS[6]  waiter channel prefix; waiter W listens on "<prefix>:W"
-- KEYS[7]  holder-info hash, optional: permit id -> who took it
--          (keyspace.lua: info_record)
-- ARGV[1]  capacity to set if the semaphore has none yet
-- ARGV[2]  n, the permits wanted (>= 1)
-- ARGV[3]  permit id (unique per acquisition)
-- ARGV[4]  lease in ms
-- ARGV[5]  waiter timeout in ms; "0": one attempt, never queue
-- ARGV[6]  "publish" or "spublish"
-- ARGV[7]  holder-info payload to record for the permit ("": none)
--
-- Reply: {token, n} granted; when not, a wait hint in ms (until the first
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
local shape = sem_shape(KEYS[1])
if shape ~= 'none' and shape ~= 'semaphore' then
  return wrong_kind(1, shape)
end
do
  local refusal = check_own({{2, 'zset'}, {3, 'hash'}, {4, 'zset'}, {5, 'zset'}})
    or (KEYS[7] and info_refusal(7))
    or permitted({{'hsetnx', KEYS[1]}, {'hset', KEYS[1]},
    {'zadd', KEYS[2]}, {'zrem', KEYS[2]}, {'zremrangebyscore', KEYS[2]}, {'pexpire', KEYS[2]}, {'del', KEYS[2]},
    {'hset', KEYS[3]}, {'hdel', KEYS[3]}, {'hincrby', KEYS[3]}, {'pexpire', KEYS[3]}, {'del', KEYS[3]},
    {'zadd', KEYS[4]}, {'zrem', KEYS[4]}, {'pexpire', KEYS[4]}, {'zadd', KEYS[5]}, {'zrem', KEYS[5]},
    {'zremrangebyscore', KEYS[5]}, {'pexpire', KEYS[5]}})
  if refusal then
    return refusal
  end
end
local n, id, lease, wait = tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
redis.call('hsetnx', KEYS[1], 'capacity', ARGV[1])
local capacity = tonumber(redis.call('hget', KEYS[1], 'capacity'))
if n > capacity then
  return redis.error_reply('TOO_MANY ' .. n .. ' permits requested, capacity is ' .. capacity)
end
local now = now_us()
local now_ms = math.floor(now / 1000)
if KEYS[7] then
  info_forget_expired(KEYS[7], KEYS[2], now_ms)
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
  expire_at_least(KEYS[2], lease)
  expire_at_least(KEYS[3], lease)
  redis.call('hset', KEYS[1], 'token', string.format('%.0f', token))
  if KEYS[7] then
    info_record(KEYS[7], id, ARGV[7], lease, false)
  end
  if capacity - used > 0 then
    wake_head(KEYS[4], KEYS[6], ARGV[6]) -- the next in line may fit too
  end
  return {token, n}
end
if (freed > 0 or dropped) and capacity - used > 0 then
  wake_head(KEYS[4], KEYS[6], ARGV[6])
end
if wait > 0 then
  join_queue(KEYS[4], KEYS[5], id, now, now_ms, wait)
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[2] then
  return math.max(1, tonumber(first[2]) - now_ms)
end
return -1

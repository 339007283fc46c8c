#!lua
-- sem_state: read (and optionally set) a semaphore's capacity and holders.
-- Runs with lib.lua prepended.
--
-- KEYS     as sem_acquire.lua (1 semaphore hash, 2 holders, 3 permits,
--          4 queue, 5 heartbeats, 6 holder-info hash, optional: expired
--          holders' records go)
-- ARGV[1]  capacity to set if the semaphore has none yet
-- ARGV[2]  new capacity (SetPermits), or "" to keep it
-- ARGV[3]  "publish" or "spublish"
-- ARGV[4]  "1" to list the holders, "2" to list them with their holder
--          info (KEYS[6]'s record, "" for none)
--
-- Reply: {capacity, used, queued, now_ms, id1, n1, expiry1, id2, ...}
-- ("2": {..., id1, n1, expiry1, info1, id2, ...}).
-- Expired holders are taken back first, and when permits are free the head
-- of the queue is woken (a raised capacity lets waiters in at once).
-- Keys of another shape are WRONGKIND (the capacity is read exactly or not
-- at all: keyspace.lua's sem_shape); NOPERM names a write the ACL denies.
local shape = sem_shape(KEYS[1])
if shape ~= 'none' and shape ~= 'semaphore' then
  return wrong_kind(1, shape)
end
do
  local refusal = sem_refusal(2, true)
  if refusal then
    return refusal
  end
end
-- TIME before the first write: an ACL may deny it (it is only in @fast),
-- and a denied command after a write would leave that write behind.
local now_ms = math.floor(now_us() / 1000)
redis.call('hsetnx', KEYS[1], 'capacity', ARGV[1])
if ARGV[2] ~= '' then
  redis.call('hset', KEYS[1], 'capacity', ARGV[2])
end
if KEYS[6] then
  info_forget_expired(KEYS[6], KEYS[2], now_ms)
end
local freed = reclaim(KEYS[2], KEYS[3], now_ms)
local dropped = drop_dead_waiters(KEYS[4], KEYS[5], now_ms)
local capacity = tonumber(redis.call('hget', KEYS[1], 'capacity'))
local used = tonumber(redis.call('hget', KEYS[3], 'used') or '0')
if capacity - used > 0 and (freed > 0 or dropped or ARGV[2] ~= '') then
  wake_head(KEYS[4], sem_channel(KEYS[4]), ARGV[3])
end
local reply = {capacity, used, redis.call('zcard', KEYS[4]), now_ms}
if ARGV[4] == '1' or ARGV[4] == '2' then
  local with_info = ARGV[4] == '2' and KEYS[6] and info_allowed(KEYS[6]) and redis.call('type', KEYS[6]).ok == 'hash'
  local holders = redis.call('zrange', KEYS[2], 0, -1, 'withscores')
  for i = 1, #holders, 2 do
    local id = holders[i]
    reply[#reply + 1] = id
    reply[#reply + 1] = tonumber(redis.call('hget', KEYS[3], id) or '0')
    reply[#reply + 1] = tonumber(holders[i + 1])
    if ARGV[4] == '2' then
      reply[#reply + 1] = with_info and redis.call('hget', KEYS[6], id) or ''
    end
  end
end
return reply

-- sem_release: give back the permits of one acquisition. Runs with lib.lua
-- prepended.
--
-- KEYS     as sem_acquire.lua (1 semaphore hash, 2 holders, 3 permits,
--          4 queue, 5 heartbeats, 6 waiter channel prefix, 7 holder-info
--          hash, optional: the permit's record goes with it)
-- ARGV[1]  permit id
-- ARGV[2]  "publish" or "spublish" (absent: "publish")
--
-- Reply: 1 released; 2 released, but its lease had already run out (it was
-- not yet taken back); 0 no such permit (released before, or taken back
-- after its lease ran out). The head of the queue is woken. Keys of
-- another shape are WRONGKIND, NOPERM names a write the ACL denies
-- (keyspace.lua); the semaphore's configuration is not written here.
-- Globals cost a lookup each (about 120 instructions): read through locals.
local redis, KEYS, ARGV = redis, KEYS, ARGV
if not KEYS[7] then
  -- The common path: the release of the only holder of a semaphore nobody
  -- waits for. Its permits hash names it and counts no other permit, the
  -- holders zset has it alone (ZSCORE: a zset holding it; ZCARD: nothing
  -- else; the two keys are always written together), and EXISTS finds no
  -- queue: one DEL of both is the release, the one write (no ACL check
  -- needed). It calls no helper: anything else falls through to the rare
  -- paths, before any write.
  local v = redis.pcall('hmget', KEYS[3], ARGV[1], 'used')
  if v[1] and v[1] == v[2] then
    local expiry = redis.pcall('zscore', KEYS[2], ARGV[1])
    if type(expiry) == 'string' and redis.call('zcard', KEYS[2]) == 1 and redis.call('exists', KEYS[4], KEYS[5]) == 0 then
      local now = redis.call('time')
      if type(redis.pcall('del', KEYS[2], KEYS[3])) == 'number' then
        -- Expired when the expiry (ms) is not after now: expiry .. '000'
        -- against now in µs, both decimals, which compare as strings when
        -- of one length (no number to parse).
        local us = #now[2] == 6 and now[1] .. now[2] or now[1] .. string.sub('00000' .. now[2], -6)
        local e = expiry .. '000'
        if #e == #us then
          if e <= us then
            return 2
          end
        elseif tonumber(expiry) * 1000 <= tonumber(us) then
          return 2
        end
        return 1
      end
    end
  end
end
-- Rare paths: other holders or waiters, a holder record, keys of another
-- shape, no such permit.
do
  local refusal = sem_refusal(false)
  if refusal then
    return refusal
  end
end
local now_ms = math.floor(now_us() / 1000)
local n = tonumber(redis.call('hget', KEYS[3], ARGV[1]) or '0') or 0
if n == 0 then
  return 0
end
local expiry = tonumber(redis.call('zscore', KEYS[2], ARGV[1]) or '0')
redis.call('hdel', KEYS[3], ARGV[1])
redis.call('zrem', KEYS[2], ARGV[1])
if KEYS[7] then
  info_drop(KEYS[7], ARGV[1], false)
  info_forget_expired(KEYS[7], KEYS[2], now_ms)
end
if redis.call('hincrby', KEYS[3], 'used', -n) <= 0 then
  redis.call('del', KEYS[3])
end
reclaim(KEYS[2], KEYS[3], now_ms)
drop_dead_waiters(KEYS[4], KEYS[5], now_ms)
wake_head(KEYS[4], KEYS[6], ARGV[2] or 'publish')
if expiry <= now_ms then
  return 2
end
return 1

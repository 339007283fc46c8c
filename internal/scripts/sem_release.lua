-- sem_release: give back the permits of one acquisition. Runs with lib.lua
-- prepended.
--
-- KEYS[1]  holders zset, KEYS[2] permits hash, KEYS[3] queue zset,
--          KEYS[4] heartbeat zset: sem_acquire.lua's KEYS[2..5] (the
--          configuration, which a release neither reads nor writes, is no
--          key of it: an argument costs Redis about 1.5k instructions)
-- KEYS[5]  holder-info hash, optional: the permit's record goes with it
-- ARGV[1]  permit id
-- ARGV[2]  "publish" or "spublish" (absent: "publish")
--
-- Reply: 1 released; 2 released, but its lease had already run out (it was
-- not yet taken back); 0 no such permit (released before, or taken back
-- after its lease ran out). The head of the queue is woken. Keys of
-- another shape are WRONGKIND, NOPERM names a write the ACL denies
-- (keyspace.lua).
-- Globals cost a lookup each (about 120 instructions): read through locals.
local redis, KEYS, ARGV, type = redis, KEYS, ARGV, type
if not KEYS[5] then
  -- The common path: the release of the only holder of a semaphore nobody
  -- waits for. Its permits hash names it and counts no other permit, so
  -- the holders zset, written with the hash and given its expiry, holds it
  -- alone (ZSCORE: a zset holding it, and its expiry; no ZCARD: only an
  -- eviction or a foreign write leaves the zset a permit the hash does not
  -- count, which this DEL then takes back, and its holder is told at its
  -- next renewal: docs/guarantees.md, "Semaphore: the common release"),
  -- and EXISTS finds no queue (heartbeats without one are no waiter's):
  -- one DEL of both is the release, the one write (no ACL check needed).
  -- It calls no helper: anything else falls through to the rare paths,
  -- before any write.
  local v = redis.pcall('hmget', KEYS[2], ARGV[1], 'used')
  if v[1] and v[1] == v[2] then
    local expiry = redis.pcall('zscore', KEYS[1], ARGV[1])
    if type(expiry) == 'string' and redis.call('exists', KEYS[3]) == 0 then
      local now = redis.call('time')
      if type(redis.pcall('del', KEYS[1], KEYS[2])) == 'number' then
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
  local refusal = sem_refusal(1, false)
  if refusal then
    return refusal
  end
end
local now_ms = math.floor(now_us() / 1000)
local n = tonumber(redis.call('hget', KEYS[2], ARGV[1]) or '0') or 0
if n == 0 then
  return 0
end
local expiry = tonumber(redis.call('zscore', KEYS[1], ARGV[1]) or '0')
redis.call('hdel', KEYS[2], ARGV[1])
redis.call('zrem', KEYS[1], ARGV[1])
if KEYS[5] then
  info_drop(KEYS[5], ARGV[1], false)
  info_forget_expired(KEYS[5], KEYS[1], now_ms)
end
if redis.call('hincrby', KEYS[2], 'used', -n) <= 0 then
  redis.call('del', KEYS[2])
end
reclaim(KEYS[1], KEYS[2], now_ms)
drop_dead_waiters(KEYS[3], KEYS[4], now_ms)
wake_head(KEYS[3], sem_channel(KEYS[3]), ARGV[2] or 'publish')
if expiry <= now_ms then
  return 2
end
return 1

-- sem_renew: extend many permits' leases in one call (the watchdog's
-- batch). Runs with lib.lua prepended.
--
-- KEYS[i]      holders zset of permit i (all in one hash slot on a Cluster)
-- ARGV[1]      lease in milliseconds
-- ARGV[3i-1]   permit id
-- ARGV[3i]     fencing token (unused: permit ids are never reused)
-- ARGV[3i+1]   the permits hash of the same semaphore
--
-- Reply: array with 1 for each permit still held (its expiry is now at least
-- now + lease) and 0 for each permit whose lease ran out or that is gone.
-- An expired permit is never revived: its permits may be handed out again.
--
-- A holders key that is not a sorted set any more (overwritten) is not this
-- semaphore's: that permit is gone, and a permits key of another type is
-- left alone. Types are checked before any command that would fail on them
-- (WRONGTYPE), so one such key cannot abort the renewal of every other
-- permit in the batch.
local lease = tonumber(ARGV[1])
local now_ms = math.floor(now_us() / 1000)
local alive = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  local id, permits = ARGV[3 * i - 1], ARGV[3 * i + 1]
  local expiry = 0
  if redis.call('type', key).ok == 'zset' then
    expiry = tonumber(redis.call('zscore', key, id) or '0')
  end
  if expiry > now_ms then
    if expiry < now_ms + lease then
      touch(key) -- a new score does not grow memory: renew under OOM too
      redis.call('zadd', key, now_ms + lease, id)
    end
    expire_at_least(key, lease)
    if redis.call('type', permits).ok == 'hash' then
      expire_at_least(permits, lease)
    end
    alive[i] = 1
  else
    alive[i] = 0
  end
end
return alive

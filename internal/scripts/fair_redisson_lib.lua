-- fair_redisson_lib: Redisson's RFairLock queue, for fairlock's
-- WithRedissonQueue (issue 16). Java and Go waiters share one queue:
--
--   redisson_lock_queue:{N}     list of owner ids, arrival order
--   redisson_lock_timeout:{N}   zset owner -> deadline (epoch ms): the time
--                               by which the waiter expects its turn plus
--                               the queue's thread wait time
--   redisson_lock__channel:{N}:<owner>   the waiter's channel ("0": you head
--                               a free lock)
--
-- Redisson keeps the deadlines by its own arithmetic, which this file
-- follows exactly so that both libraries' entries stay consistent: a new
-- waiter's deadline is the last waiter's deadline (or, when the queue is
-- empty, now plus the lock's PTTL) plus the thread wait time; when the head
-- takes the lock, or a waiter leaves, everyone behind it moves up by the
-- thread wait time; a head whose deadline has passed is dropped. Redisson
-- computes "now" on the Java client's clock; these scripts use the server's
-- TIME. Neither list nor zset has an expiry (they are Redisson's; it cleans
-- them lazily, and so do we). Runs after lib.lua and keyspace.lua.

-- Server time in ms.
local function now_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The WRONGKIND reply when KEYS[i] is neither absent nor of type want.
local function typed(i, want)
  local t = redis.call('type', KEYS[i]).ok
  if t ~= 'none' and t ~= want then
    return wrong_kind(i, 'a ' .. t)
  end
  return nil
end

-- Drop every head whose deadline has passed (Redisson's prologue); returns
-- true when one was dropped.
local function purge_heads(queue, timeouts, now)
  local dropped = false
  while true do
    local head = redis.call('lindex', queue, 0)
    if not head then
      break
    end
    local deadline = tonumber(redis.call('zscore', timeouts, head))
    if deadline and deadline > now then
      break
    end
    redis.call('zrem', timeouts, head)
    redis.call('lpop', queue)
    dropped = true
  end
  return dropped
end

-- Move every waiter from position from (0-based) on up by wait ms.
local function move_up(queue, timeouts, from, wait)
  for _, o in ipairs(redis.call('lrange', queue, from, -1)) do
    if redis.call('zscore', timeouts, o) then
      redis.call('zincrby', timeouts, -wait, o)
    end
  end
end

-- Tell the head, if any, that the lock is free.
local function wake_redisson_head(queue, channel_prefix, publish)
  local head = redis.call('lindex', queue, 0)
  if head then
    notify(publish, channel_prefix .. ':' .. head, '0')
  end
end

-- Take owner out of the queue, moving everyone behind it up by wait ms;
-- returns true when it was queued.
local function leave_queue(queue, timeouts, owner, wait)
  local pos = redis.call('lpos', queue, owner)
  if not pos then
    redis.call('zrem', timeouts, owner)
    return false
  end
  move_up(queue, timeouts, pos + 1, wait)
  redis.call('lrem', queue, 0, owner)
  redis.call('zrem', timeouts, owner)
  return true
end

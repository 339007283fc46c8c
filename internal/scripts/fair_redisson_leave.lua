-- fair_redisson_leave: a waiter gives up its place in Redisson's fair queue
-- (Redisson's acquireFailed). Runs with lib.lua, keyspace.lua and
-- fair_redisson_lib.lua prepended.
--
-- KEYS     as fair_redisson_acquire.lua
-- ARGV[1]  owner id
-- ARGV[2]  "publish" or "spublish"
-- ARGV[3]  the queue's thread wait time in ms
--
-- Reply: 1 when the owner was queued. Everyone behind it moves up by the
-- thread wait time; when the lock is free, the new head is told.
do
  local refusal = typed(2, 'list') or typed(3, 'zset')
    or permitted({{'lrem', KEYS[2]}, {'zrem', KEYS[3]}, {'zincrby', KEYS[3]}})
  if refusal then
    return refusal
  end
end
if not leave_queue(KEYS[2], KEYS[3], ARGV[1], tonumber(ARGV[3])) then
  return 0
end
if redis.call('exists', KEYS[1]) == 0 then
  wake_redisson_head(KEYS[2], KEYS[5], ARGV[2])
end
return 1

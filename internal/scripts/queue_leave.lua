-- queue_leave: a waiter gives up its place in a wait queue (fairlock,
-- semaphore) after a cancelled or failed wait. Runs with lib.lua prepended.
--
-- KEYS[1]  queue zset
-- KEYS[2]  heartbeat zset
-- KEYS[3]  waiter channel prefix
-- ARGV[1]  waiter id
-- ARGV[2]  "publish" or "spublish"
--
-- Reply: 1 when the waiter was queued. If it was first in line, the next
-- live waiter is woken to check whether its turn has come (if not, it just
-- waits again). A queue of another shape (keyspace.lua) is WRONGKIND;
-- NOPERM names a write the ACL denies.
local refusal = check_own({{1, 'zset'}, {2, 'zset'}})
  or permitted({{'zrem', KEYS[1]}, {'zrem', KEYS[2]}, {'zremrangebyscore', KEYS[2]}})
if refusal then
  return refusal
end
local head = redis.call('zrange', KEYS[1], 0, 0)[1]
redis.call('zrem', KEYS[2], ARGV[1])
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if head == ARGV[1] then
  drop_dead_waiters(KEYS[1], KEYS[2], math.floor(now_us() / 1000))
  wake_head(KEYS[1], KEYS[3], ARGV[2])
end
return 1

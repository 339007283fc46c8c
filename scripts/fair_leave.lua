-- fair_leave: a waiter gives up its place (cancelled or failed Lock). Runs
-- with lib.lua prepended.
--
-- KEYS[1]  lock hash
-- KEYS[2]  queue zset
-- KEYS[3]  heartbeat zset
-- KEYS[4]  waiter channel prefix
-- ARGV[1]  owner id
-- ARGV[2]  "publish" or "spublish"
--
-- Reply: 1 when the owner was queued. If it was the head of a free lock, the
-- next live waiter is woken.
local head = redis.call('zrange', KEYS[2], 0, 0)[1]
redis.call('zrem', KEYS[3], ARGV[1])
if redis.call('zrem', KEYS[2], ARGV[1]) == 0 then
  return 0
end
if head == ARGV[1] and redis.call('exists', KEYS[1]) == 0 then
  drop_dead_waiters(KEYS[2], KEYS[3], math.floor(now_us() / 1000))
  wake_head(KEYS[2], KEYS[4], ARGV[2])
end
return 1

#!lua
-- latch_try_set_count: set the count of a latch that does not exist
-- (Redisson's RCountDownLatch.trySetCount).
--
-- KEYS[1]  latch key (the raw name: a string holding the count)
-- KEYS[2]  Redisson's latch channel
-- ARGV[1]  the count, decimal, >= 1 (checked by the caller)
-- ARGV[2]  "publish" or "spublish"
--
-- Reply: 1 when the latch was created (and "1", Redisson's new-count
-- message, published), 0 when a latch exists already (left as it is).
-- Anything else under the name is WRONGKIND; NOPERM names a denied SET.
local shape = latch_shape(KEYS[1])
if shape == 'latch' then
  return 0
end
if shape ~= 'none' then
  return wrong_kind(1, shape)
end
local refusal = permitted({{'set', KEYS[1]}})
if refusal then
  return refusal
end
redis.call('set', KEYS[1], ARGV[1])
notify(ARGV[2], KEYS[2], '1')
return 1

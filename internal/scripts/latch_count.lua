#!lua flags=no-writes
-- latch_count: a latch's count (Redisson's RCountDownLatch.getCount).
--
-- KEYS[1]  latch key
--
-- Reply: the count as a decimal string, "0" when there is no latch.
-- Anything else under the name is WRONGKIND. Writes nothing.
local shape = latch_shape(KEYS[1])
if shape == 'none' then
  return '0'
end
if shape ~= 'latch' then
  return wrong_kind(1, shape)
end
return redis.call('get', KEYS[1])

-- latch_count_down: decrement a latch's count; at zero the key goes and
-- "0" (Redisson's zero-count message) is published, which releases every
-- waiter of either library (Redisson's RCountDownLatch.countDown).
--
-- KEYS[1]  latch key
-- KEYS[2]  Redisson's latch channel
-- ARGV[1]  "publish" or "spublish"
--
-- Reply: the count afterwards (0 when the latch was open or absent: like
-- Redisson's, a count-down of no latch changes nothing and publishes
-- nothing). Anything else under the name is WRONGKIND; NOPERM names a
-- denied DECR or DEL, with nothing written.
local shape = latch_shape(KEYS[1])
if shape == 'none' then
  return 0
end
if shape ~= 'latch' then
  return wrong_kind(1, shape)
end
local refusal = permitted({{'decr', KEYS[1]}, {'del', KEYS[1]}})
if refusal then
  return refusal
end
local v = redis.call('decr', KEYS[1])
if v <= 0 then
  redis.call('del', KEYS[1])
end
if v == 0 then
  notify(ARGV[1], KEYS[2], '0')
end
return math.max(v, 0)

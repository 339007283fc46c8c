-- latch_delete: delete a latch whatever its count (Redisson's
-- RCountDownLatch.delete), which opens it.
--
-- KEYS[1]  latch key
-- KEYS[2]  Redisson's latch channel
-- ARGV[1]  "publish" or "spublish"
--
-- Reply: 1 when a latch was deleted, 0 when there was none. On a delete
-- "0" is published, the zero-count message, so that the waiters of either
-- library re-check and return. (Redisson's own delete publishes "1", its
-- new-count message, on which a Redisson await does not re-check: it
-- sleeps on until its timeout. See the latch package doc.) Anything else
-- under the name is WRONGKIND and stays.
local shape = latch_shape(KEYS[1])
if shape == 'none' then
  return 0
end
if shape ~= 'latch' then
  return wrong_kind(1, shape)
end
local refusal = permitted({{'del', KEYS[1]}})
if refusal then
  return refusal
end
redis.call('del', KEYS[1])
notify(ARGV[1], KEYS[2], '0')
return 1

-- sem_force_release: take back every permit of a semaphore, whoever holds
-- them (operator action), and wake the first waiter. The capacity stays.
-- Runs with lib.lua prepended.
--
-- KEYS     as sem_acquire.lua (1 semaphore hash, 2 holders, 3 permits,
--          4 queue, 5 heartbeats, 6 holder-info hash, optional: deleted
--          with the holders)
-- ARGV[1]  "publish" or "spublish"
--
-- Reply: the number of permits that were held. Their holders find out at
-- their next renewal (their Permits report the loss). Keys of another
-- shape are WRONGKIND — the semaphore hash too: a user's key or another
-- kind's lock under the name is reported, not taken for a free semaphore —
-- NOPERM names a write the ACL denies (keyspace.lua).
do
  local shape = sem_shape(KEYS[1])
  if shape ~= 'none' and shape ~= 'semaphore' then
    return wrong_kind(1, shape)
  end
  local refusal = sem_refusal(2, false)
  if refusal then
    return refusal
  end
end
local used = tonumber(redis.call('hget', KEYS[3], 'used') or '0') or 0
-- TIME before the first write: an ACL may deny it (it is only in @fast),
-- and a denied command after a write would leave that write behind.
local now_ms = math.floor(now_us() / 1000)
redis.call('del', KEYS[2], KEYS[3])
if KEYS[6] then
  info_drop(KEYS[6], nil, true)
end
drop_dead_waiters(KEYS[4], KEYS[5], now_ms)
wake_head(KEYS[4], sem_channel(KEYS[4]), ARGV[1])
return used

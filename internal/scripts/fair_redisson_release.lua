-- fair_redisson_release: undo one hold (or all) of an owner, idempotently,
-- and tell the head of Redisson's fair queue. Runs with lib.lua,
-- keyspace.lua and fair_redisson_lib.lua prepended.
--
-- KEYS     as fair_redisson_acquire.lua
-- ARGV     as in rlock_release.lua: owner id, token, expected hold count,
--          "publish" or "spublish", lease, latch field, request id, holds,
--          last (trailing ones at their defaults left out)
--
-- Reply: {acted, count}, or an integer count, as rlock_release.lua. A full release deletes the
-- hash, drops the heads whose deadline passed, and publishes "0" on the
-- head's channel "redisson_lock__channel:{N}:<owner>" only.
local token, expected = ARGV[2], ARGV[3] or '1'
if token and token ~= '0' and (ARGV[6] or '') == '' and not KEYS[6]
    and (expected == '1' or expected == '0' or expected == '-1')
    and redis.call('exists', KEYS[2], KEYS[3]) == 0
    and release_last(KEYS[1], KEYS[4], ARGV[1], token) then
  -- The common path, the release of a hold's last count with nobody in
  -- Redisson's queue: no one to tell (lib.lua release_last).
  return 0
end
-- Rare paths: a nested or latched hold, waiters, a holder record, no lock,
-- keys of another shape.
local shape = lock_shape(KEYS[1])
if (shape ~= 'none' and shape ~= 'lock') or hold_count(KEYS[1], ARGV[1]) == nil then
  return {0, 0}
end
do
  local refusal = typed(2, 'list') or typed(3, 'zset') or check_own({{4, 'string', TOKEN}})
    or permitted({{'hset', KEYS[1]}, {'hincrby', KEYS[1]}, {'pexpire', KEYS[1]}, {'del', KEYS[1]}, {'set', KEYS[4]},
      {'lpop', KEYS[2]}, {'zrem', KEYS[3]}})
  if refusal then
    return refusal
  end
end
local reply, deleted = release_hold(KEYS[1], ARGV[1], tonumber(ARGV[5] or '0'), tonumber(ARGV[3] or '1'), KEYS[4],
  tonumber(ARGV[2] or '0'), ARGV[6], ARGV[7], tonumber(ARGV[8] or '1'),
  ARGV[9] == '1')
if deleted then
  if KEYS[6] then
    info_drop(KEYS[6], ARGV[1], true)
  end
  purge_heads(KEYS[2], KEYS[3], now_ms())
  wake_redisson_head(KEYS[2], KEYS[5], ARGV[4] or 'publish')
end
return reply

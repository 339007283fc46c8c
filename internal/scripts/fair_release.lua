-- fair_release: undo one hold (or all) of an owner, idempotently, and hand a
-- free lock to the queue's head. Runs with lib.lua prepended.
--
-- KEYS[1]  lock hash
-- KEYS[2]  queue zset
-- KEYS[3]  heartbeat zset
-- KEYS[4]  last-token key
-- KEYS[5]  waiter channel prefix
-- KEYS[6]  holder-info hash, optional: its record goes with the last hold
-- ARGV     as in rlock_release.lua: owner id, token, expected hold count,
--          "publish" or "spublish", lease, latch field, request id, holds,
--          last (trailing ones at their defaults left out)
--
-- Reply: {acted, count}, or an integer count, as rlock_release.lua. A full release deletes the hash
-- and publishes "0" on the channel of the first live waiter only.
-- A key that is no lock of this kind holds no hold of this owner: {0, 0},
-- nothing written; WRONGKIND for a queue or token key that is not ours,
-- NOPERM naming a write the ACL denies (keyspace.lua).
-- Globals cost a script a lookup in the globals table each (about 120
-- instructions): the script reads them through locals.
local redis, KEYS, ARGV = redis, KEYS, ARGV
local token, expected = ARGV[2], ARGV[3] or '1'
if token and token ~= '0' and (ARGV[6] or '') == '' and not KEYS[6]
    and (expected == '1' or expected == '0' or expected == '-1')
    and redis.call('exists', KEYS[2], KEYS[3]) == 0
    and release_last(KEYS[1], KEYS[4], ARGV[1], token) then
  -- The common path, the release of a hold's last count with nobody
  -- waiting: no one to wake (lib.lua release_last).
  return 0
end
-- Rare paths: a nested or latched hold, waiters, a holder record, no lock,
-- keys of another shape.
local shape = lock_shape(KEYS[1])
if (shape ~= 'none' and shape ~= 'lock') or hold_count(KEYS[1], ARGV[1]) == nil then
  return {0, 0}
end
local refusal = check_own({{2, 'zset'}, {3, 'zset'}, {4, 'string', TOKEN}})
  or permitted({{'hset', KEYS[1]}, {'hincrby', KEYS[1]}, {'pexpire', KEYS[1]}, {'del', KEYS[1]}, {'set', KEYS[4]},
    {'zadd', KEYS[2]}, {'zrem', KEYS[2]}, {'pexpire', KEYS[2]},
    {'zadd', KEYS[3]}, {'zrem', KEYS[3]}, {'zremrangebyscore', KEYS[3]}, {'pexpire', KEYS[3]}})
if refusal then
  return refusal
end
local reply, deleted = release_hold(KEYS[1], ARGV[1], tonumber(ARGV[5] or '0'), tonumber(ARGV[3] or '1'), KEYS[4],
  tonumber(ARGV[2] or '0'), ARGV[6], ARGV[7], tonumber(ARGV[8] or '1'),
  ARGV[9] == '1')
if deleted then
  if KEYS[6] then
    info_drop(KEYS[6], ARGV[1], true)
  end
  drop_dead_waiters(KEYS[2], KEYS[3], math.floor(now_us() / 1000))
  wake_head(KEYS[2], KEYS[5], ARGV[4] or 'publish')
end
return reply

-- rwlock_write_release: undo one write hold (or all) of an owner,
-- idempotently. Runs with lib.lua prepended.
--
-- KEYS[1]  lock hash
-- KEYS[2]  channel "redisson_rwlock:{name}"
-- KEYS[3]  last-token key
-- KEYS[4]  phase key: the token of the lock's current phase (rwlock_lib.lua)
-- KEYS[5]  holder-info hash, optional: the write hold's record goes with its
--          last hold, every record with the hash
-- ARGV[1]  "<owner>:write" (the write field)
-- ARGV[2]  fencing token of the hold being released ("0": any): act only
--          while the lock's phase carries it, as rwlock_renew.lua checks (a
--          later hold of the same owner, after this one expired, is another
--          hold)
-- ARGV[3]  expected write count before this release (absent: 1; n > 0, 0 = any, -1 =
--          all), as in rlock_release.lua
-- ARGV[4]  "publish" or "spublish" (absent: "publish")
-- ARGV[5]  with ARGV[3] = 0: how many write holds to release (default 1),
--          as in rlock_release.lua
-- ARGV[6]  lease in milliseconds, applied when write holds remain (absent when
--          ARGV[3] is 1: no hold remains)
--
-- Arguments at their defaults are left out at the end.
--
-- Reply: {acted, count}, or an integer count, as rlock_release.lua. At the last write hold: if the
-- owner still has read holds the lock is downgraded to mode "read" and "1" is
-- published so waiting readers join at once; otherwise the hash is deleted
-- and "1" is published.
--
-- A key that is no read-write lock holds no hold of this owner: {0, 0},
-- nothing written; WRONGKIND for a last-token key that is not ours, NOPERM
-- naming a write the ACL denies (keyspace.lua).
-- Globals cost a lookup each (about 120 instructions): read through locals.
local redis, KEYS, ARGV = redis, KEYS, ARGV
if not KEYS[5] and ((ARGV[3] or '1') == '1' or ARGV[3] == '0' or ARGV[3] == '-1') and ARGV[2] and ARGV[2] ~= '0' then
  -- The common path, the release of the last write hold of an owner that
  -- holds nothing else: the hash is that hold alone, and the phase key
  -- carries its token and field (so both are ours, and the hold is the
  -- lock's current phase). A hash with the write field "<owner>:write" is
  -- a read-write lock's (no owner id of any kind ends with ":write"), in
  -- mode "write" (Redisson's and our scripts write "mode" first and drop
  -- the write field before mode turns "read"): two fields are that field
  -- and "mode", so HGET and HLEN show the hash as HGETALL would. The token
  -- is kept first (lib.lua's keep_last); DEL of the hash and the phase key,
  -- the second write, takes the one ACL check. Anything else falls through
  -- to the rare paths, before any write.
  if redis.pcall('hget', KEYS[1], ARGV[1]) == '1' and redis.pcall('hlen', KEYS[1]) == 2
      and redis.pcall('get', KEYS[4]) == ARGV[2] .. ' w ' .. ARGV[1]
      and (not redis.acl_check_cmd or redis.acl_check_cmd('del', KEYS[1], KEYS[4]))
      and keep_last(KEYS[3], ARGV[2]) then
    redis.call('del', KEYS[1], KEYS[4])
    redis.pcall(ARGV[4] or 'publish', KEYS[2], '1') -- a denied PUBLISH costs only the wake-up
    return 0
  end
end
-- Rare paths: a nested hold, read holds beside it, a holder record, no
-- lock, keys of another shape.
local shape = lock_shape(KEYS[1])
if (shape ~= 'none' and shape ~= 'rwlock') or hold_count(KEYS[1], ARGV[1]) == nil then
  return {0, 0}
end
do
  local refusal = check_own({{3, 'string', TOKEN}, {4, 'string', RW_PHASE}})
    or permitted({{'hincrby', KEYS[1]}, {'pexpire', KEYS[1]}, {'hdel', KEYS[1]}, {'hset', KEYS[1]},
      {'del', KEYS[1]}, {'set', KEYS[3]}, {'set', KEYS[4]}, {'pexpire', KEYS[4]}, {'del', KEYS[4]}})
  if refusal then
    return refusal
  end
end
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0') or 0
local expected = tonumber(ARGV[3] or '1')
if count == 0 or (expected > 0 and count ~= expected) then
  return {0, count}
end
if not of_phase(KEYS[1], KEYS[4], ARGV[2]) then
  return {0, count}
end
local holds = 1
if expected == 0 then
  holds = math.max(tonumber(ARGV[5] or '1') or 1, 1)
end
if expected >= 0 and count > holds then
  redis.call('hincrby', KEYS[1], ARGV[1], -holds)
  extend(KEYS[1], tonumber(ARGV[6]))
  phase_follow(KEYS[1], KEYS[4])
  return {1, count - holds}
end
local token = phase_token(KEYS[1], KEYS[4], redis.call('hget', KEYS[1], 'mode'))
redis.call('hdel', KEYS[1], ARGV[1])
if KEYS[5] then
  info_drop(KEYS[5], ARGV[1], false)
end
-- Holds left: every field but "mode" and the old layout's "redisync:..."
-- (Redisson's own release counts fields, and ours no longer adds any).
local others = 0
for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
  if f ~= 'mode' and string.sub(f, 1, 9) ~= 'redisync:' then
    others = others + 1
  end
end
if others > 0 then
  -- Downgrade: the owner still reads, in a read phase with the write's token.
  redis.call('hset', KEYS[1], 'mode', 'read')
  if token then
    phase_set(KEYS[1], KEYS[4], token, 'r')
  end
else
  redis.call('del', KEYS[1])
  if KEYS[5] then
    info_drop(KEYS[5], nil, true)
  end
  phase_end(KEYS[4], KEYS[3], token)
end
notify(ARGV[4] or 'publish', KEYS[2], '1')
return {1, 0}

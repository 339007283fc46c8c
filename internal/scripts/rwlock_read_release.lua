-- rwlock_read_release: undo one read hold (or all) of an owner, idempotently.
-- Runs with lib.lua prepended.
--
-- KEYS[1]  lock hash
-- KEYS[2]  channel "redisson_rwlock:{name}"
-- KEYS[3]  this owner's timeout-key prefix "{name}:<owner>:rwlock_timeout"
-- KEYS[4]  the name's timeout-key base "{name}" (other owners' keys are
--          "<base>:<owner>:rwlock_timeout:<n>")
-- KEYS[5]  last-token key
-- KEYS[6]  phase key: the token of the lock's current phase (rwlock_lib.lua)
-- KEYS[7]  holder-info hash, optional: the owner's record goes with its last
--          read hold, every record with the hash
-- ARGV[1]  owner id (the read field)
-- ARGV[2]  fencing token of the hold being released ("0": any), as in
--          rwlock_write_release.lua
-- ARGV[3]  expected read count before this release (absent: 1; n > 0, 0 = any,
--          -1 = all),
--          as in rlock_release.lua
-- ARGV[4]  "publish" or "spublish" (absent: "publish")
-- ARGV[5]  with ARGV[3] = 0: how many read holds to release (default 1),
--          as in rlock_release.lua
-- ARGV[6]  lease in milliseconds (unused: remaining read holds keep their own)
--
-- Arguments at their defaults are left out at the end.
--
-- Reply: {acted, count}, or an integer count, as rlock_release.lua. When no live read hold is left
-- and no writer holds the lock, the hash is deleted and "1" is published
-- (every waiter re-checks: readers and writers may both be waiting). Fields
-- of readers whose timeout keys all expired (crashed readers) do not keep the
-- lock: they are deleted with the hash.
--
-- A key that is no read-write lock holds no hold of this owner: {0, 0},
-- nothing written. This owner's read-hold keys and the last-token key must
-- be ours (else WRONGKIND); NOPERM names a write the ACL denies
-- (keyspace.lua).
-- Globals cost a lookup each (about 120 instructions): read through locals.
local redis, KEYS, ARGV = redis, KEYS, ARGV
if not KEYS[7] and ((ARGV[3] or '1') == '1' or ARGV[3] == '0' or ARGV[3] == '-1') and ARGV[2] and ARGV[2] ~= '0' then
  -- The common path, the release of the only read hold on the lock: the
  -- hash is that hold alone, the phase key carries its token (so both are
  -- ours, and the hold is of the lock's current phase), and its timeout
  -- key is ours ("1" with an expiry) or gone. The token is kept first
  -- (lib.lua's keep_last); DEL of the hash, the phase key and the timeout
  -- key, the second write, takes the one ACL check. Anything else falls
  -- through to the rare paths, before any write.
  local h = redis.pcall('hgetall', KEYS[1])
  local hold = KEYS[3] .. ':1'
  local token = ARGV[2]
  if #h == 4 and ((h[1] == 'mode' and h[2] == 'read' and h[3] == ARGV[1] and h[4] == '1')
      or (h[3] == 'mode' and h[4] == 'read' and h[1] == ARGV[1] and h[2] == '1'))
      and redis.pcall('get', KEYS[6]) == token .. ' r' then
    local v = redis.pcall('get', hold)
    if (not v or (v == '1' and redis.call('pttl', hold) > 0))
        and (not redis.acl_check_cmd or redis.acl_check_cmd('del', KEYS[1], KEYS[6], hold))
        and keep_last(KEYS[5], token) then
      redis.call('del', KEYS[1], KEYS[6], hold)
      redis.pcall(ARGV[4] or 'publish', KEYS[2], '1') -- a denied PUBLISH costs only the wake-up
      return 0
    end
  end
end
-- Rare paths: other read holds, a writer, a holder record, no lock, keys
-- of another shape.
local shape = lock_shape(KEYS[1])
local held = hold_count(KEYS[1], ARGV[1])
if (shape ~= 'none' and shape ~= 'rwlock') or held == nil then
  return {0, 0}
end
for n = 1, held do
  local found = foreign(KEYS[3] .. ':' .. n, 'string', READ_HOLD)
  if found then
    return wrong_kind(3, found .. ' at read hold ' .. n)
  end
end
do
  local refusal = check_own({{5, 'string', TOKEN}, {6, 'string', RW_PHASE}})
    or permitted({{'hdel', KEYS[1]}, {'hset', KEYS[1]}, {'pexpire', KEYS[1]}, {'del', KEYS[1]},
      {'del', KEYS[3] .. ':1'}, {'set', KEYS[5]}, {'pexpire', KEYS[6]}, {'del', KEYS[6]}})
  if refusal then
    return refusal
  end
end
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0') or 0
local expected = tonumber(ARGV[3] or '1')
if count == 0 or (expected > 0 and count ~= expected) then
  return {0, count}
end
if not of_phase(KEYS[1], KEYS[6], ARGV[2]) then
  return {0, count}
end
local left = count - 1
if expected < 0 then
  left = 0
elseif expected == 0 then
  left = math.max(count - math.max(tonumber(ARGV[5] or '1') or 1, 1), 0)
end
for n = left + 1, count do
  redis.call('del', KEYS[3] .. ':' .. n)
end
if left == 0 then
  redis.call('hdel', KEYS[1], ARGV[1])
  if KEYS[7] then
    info_drop(KEYS[7], ARGV[1], false)
  end
else
  redis.call('hset', KEYS[1], ARGV[1], left)
end
if redis.call('hget', KEYS[1], 'mode') == 'write' then
  return {1, left} -- the writer (this owner) still holds the lock
end
-- The longest remaining lease of any live read hold.
local longest = -2
local fields = redis.call('hgetall', KEYS[1])
for i = 1, #fields, 2 do
  local field, n = fields[i], tonumber(fields[i + 1])
  if field ~= 'mode' and n and string.sub(field, -6) ~= ':write' then
    for k = 1, n do
      local pttl = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. k)
      if pttl > longest then
        longest = pttl
      end
    end
  end
end
if longest > 0 then
  redis.call('pexpire', KEYS[1], longest)
  phase_follow(KEYS[1], KEYS[6])
  return {1, left}
end
local token = phase_token(KEYS[1], KEYS[6], 'read')
redis.call('del', KEYS[1])
if KEYS[7] then
  info_drop(KEYS[7], nil, true)
end
phase_end(KEYS[6], KEYS[5], token)
notify(ARGV[4] or 'publish', KEYS[2], '1')
return {1, left}

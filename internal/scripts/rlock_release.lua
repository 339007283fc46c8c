-- rlock_release: undo one hold (or all holds) of an owner, idempotently.
-- Runs with its helpers prepended, as rlock_acquire.lua.
--
-- KEYS[1]  lock hash
-- KEYS[2]  lock channel (redisson_lock__channel:{name})
-- KEYS[3]  last-token key
-- KEYS[4]  holder-info hash, optional: its record goes with the last hold
-- ARGV[1]  owner id
-- ARGV[2]  fencing token of the hold being released: act only while the
--          lock carries it (a later hold of the same owner is another hold);
--          "0": any (a resumed owner, or a Redisson hold without a token)
-- ARGV[3]  expected hold count before this release (absent: 1):
--            n > 0  act only if the count is n (a repeated call finds n-1 and
--                   does nothing, so a retried release never decrements twice)
--            0      decrement whatever the count (an owner other handles share)
--            -1     release every hold of the owner (cleanup of a lost hold)
-- ARGV[4]  "publish" or "spublish" (absent: "publish")
-- ARGV[5]  lease in milliseconds, applied when holds remain (absent when
--          ARGV[3] is 1: no hold remains)
-- ARGV[6]  the handle's latch field ("" or absent for an owner only one
--          handle uses; see lib.lua), and ARGV[7] this request's id. With a
--          latch, a retried request replays its first outcome, and ARGV[3] =
--          -2 undoes the acquire with request id ARGV[7] (only if it granted).
-- ARGV[8]  with ARGV[3] = 0: how many holds to release (default 1), so the
--          cleanup of a lost hold of a shared owner removes that handle's
--          holds and no other handle's; the last ones delete the hash.
-- ARGV[9]  "1" when this request ends the last hold of the handle, whose
--          latch recorded it and whose token ARGV[2] is: the latch field
--          goes (kept where the ACL denies HDEL), and a retry that finds no
--          latch field while the lock carries the token replays "released"
-- Arguments at their defaults are left out at the end (every argument costs
-- a Lua string per call).
--
-- Reply: {acted, count}: acted is 1 when this call changed the lock, count is
-- the owner's hold count afterwards (0: released, or not held at all); an
-- integer count when it acted (the common path's cheaper reply: 0).
-- A full release deletes the hash and publishes "0" on the channel.
-- A key that is no lock of this kind (keyspace.lua) holds no hold of this
-- owner: {0, 0}, nothing written. Errors: WRONGKIND for a last-token key
-- that is not ours, NOPERM naming a write the ACL denies.
-- Globals cost a script a lookup in the globals table each (about 120
-- instructions): the common path reads them through locals.
local redis, KEYS, ARGV = redis, KEYS, ARGV
local token, expected = ARGV[2], ARGV[3] or '1'
if token and token ~= '0' and (ARGV[6] or '') == '' and not KEYS[4]
    and (expected == '1' or expected == '0' or expected == '-1') then
  -- The common path, the release of a hold's last count: lib.lua's
  -- release_last written out (see there why each step is safe), as the
  -- acquire's.
  local lock, token_key = KEYS[1], KEYS[3]
  local v = redis.pcall('hmget', lock, ARGV[1], 'redisync:token', 'mode')
  if v[1] == '1' and v[2] == token and not v[3]
      and not (redis.acl_check_cmd and not redis.acl_check_cmd('del', lock)) then
    local now = redis.call('time') -- server time in µs, in decimal:
    now = #now[2] == 6 and now[1] .. now[2] or now[1] .. string.sub('00000' .. now[2], -6)
    if #token < #now or (#token == #now and token <= now) then -- token <= now
      local last = redis.pcall('set', token_key, token, 'PX', '10000', 'NX', 'GET') -- KEEP_TOKEN_MS
      if last and type(last) == 'string' and string.match(last, '^%d+$') and redis.call('pttl', token_key) > 0 then
        redis.call('set', token_key, token, 'PX', '10000')
        last = false
      end
      if last == false then
        redis.call('del', lock)
        redis.pcall(ARGV[4] or 'publish', KEYS[2], '0') -- a denied PUBLISH costs only the wake-up
        return 0
      end
    end
  end
end
-- Rare paths: the release of a nested hold, a latched or undone one, of a
-- lock that is not there or not this hold.
local shape = lock_shape(KEYS[1])
if (shape ~= 'none' and shape ~= 'lock') or hold_count(KEYS[1], ARGV[1]) == nil then
  return {0, 0}
end
local refusal = check_own({{3, 'string', TOKEN}})
  or permitted({{'hincrby', KEYS[1]}, {'hset', KEYS[1]}, {'pexpire', KEYS[1]}, {'del', KEYS[1]}, {'set', KEYS[3]}})
if refusal then
  return refusal
end
local reply, deleted = release_hold(KEYS[1], ARGV[1], tonumber(ARGV[5] or '0'), tonumber(ARGV[3] or '1'), KEYS[3],
  tonumber(ARGV[2] or '0'), ARGV[6], ARGV[7], tonumber(ARGV[8] or '1'),
  ARGV[9] == '1')
if deleted then
  if KEYS[4] then
    info_drop(KEYS[4], ARGV[1], true)
  end
  notify(ARGV[4] or 'publish', KEYS[2], '0')
end
return reply

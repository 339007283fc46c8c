-- rwlock_lib: the read-write lock's fencing token, kept outside the lock
-- hash (issue 16). Redisson's RReadWriteLock scripts count and inspect the
-- hash's fields (a write release deletes the hash only when "mode" is the
-- last field left), so nothing of ours may live there: the token of the
-- lock's current phase lives in its own string key in the name's slot, the
-- phase key "redisync_rwlock_token:{H}:N", with the hash's expiry:
--
--   "<token> w <owner>:write"   a write phase, drawn by that writer
--   "<token> r"                 a read phase (also the one a downgrade leaves)
--
-- Redisson's scripts never touch the phase key, so it can outlive a phase
-- that a Redisson release ended; phase_token therefore believes it only
-- while the hash still matches (the same mode, and for a write phase the same
-- writer's field). The last-token key "redisync_lock_token:{H}:N" keeps its
-- role (rlock_acquire.lua): the last token, for 10 s after a release.
--
-- The old layout (before issue 16) kept "redisync:token" = "t<token>" in the
-- hash; phase_token still reads it, so holds taken before an upgrade are
-- renewed and released as before. Runs after lib.lua and keyspace.lua.

-- Pattern of a phase key's value.
local RW_PHASE = '^%d+ [rw]'

-- The token that v, the phase key's value (false: none, or not a string),
-- records for the phase of lock, whose "mode" is mode, or nil when it
-- records no phase of this hash. known is a field the caller has seen in
-- lock (nil: none), so that a look at it is spared.
local function phase_value(lock, v, mode, known)
  local token, kind, writer = string.match(v or '', '^(%d+) ([rw]) ?(.*)$')
  if token and kind == 'r' and mode == 'read' then
    return tonumber(token)
  end
  -- A write phase: while its writer writes, or, once a Redisson release
  -- downgraded it (mode "read" without a word to us), while the writer
  -- still reads.
  local field = token and kind == 'w' and ((mode == 'write' and writer)
    or (mode == 'read' and string.sub(writer, -6) == ':write' and string.sub(writer, 1, -7)))
  if field and (field == known or redis.call('hexists', lock, field) == 1) then
    return tonumber(token)
  end
  return nil
end

-- The token of the lock's current phase (mode: the hash's "mode"), or nil
-- when no phase token of this hash is known (a phase a Redisson client
-- began).
local function phase_token(lock, phase_key, mode)
  local token = phase_value(lock, redis.call('get', phase_key), mode, nil)
  if token then
    return token
  end
  local old = redis.call('hget', lock, 'redisync:token')
  if old then
    return tonumber(string.sub(old, 2))
  end
  return nil
end

-- Whether a hold with token (a string; "0" or nil: any) belongs to lock's
-- current phase: a phase whose token we do not know (a Redisson client
-- began it) is not held against the hold, as rwlock_renew.lua judges it.
local function of_phase(lock, phase_key, token)
  if token == nil or token == '0' or token == '' then
    return true
  end
  local current = phase_token(lock, phase_key, redis.call('hget', lock, 'mode'))
  return current == nil or current == tonumber(token)
end

-- A fresh token (lib.lua's next_token), also above a phase key's token.
local function phase_next(last_key, phase_key)
  local token = next_token(last_key)
  local v = redis.call('get', phase_key)
  local prior = v and tonumber(string.match(v, '^(%d+)'))
  if prior and prior >= token then
    token = prior + 1
  end
  return token
end

-- Record token as the phase of lock ("w <write field>" or "r"), with the
-- hash's expiry.
local function phase_set(lock, phase_key, token, kind)
  local pttl = redis.call('pttl', lock)
  if pttl < 1 then
    pttl = 1
  end
  redis.call('set', phase_key, string.format('%.0f', token) .. ' ' .. kind, 'px', pttl)
end

-- Give the phase key the hash's expiry again (after the hash's changed).
local function phase_follow(lock, phase_key)
  local pttl = redis.call('pttl', lock)
  if pttl > 0 and redis.call('exists', phase_key) == 1 then
    redis.call('pexpire', phase_key, pttl)
  end
end

-- The hash was deleted: drop the phase and keep its token as the last one
-- (lib.lua's keep_token: until the server clock is 10 s past it); now as
-- keep_token takes it.
local function phase_end(phase_key, last_key, token, now)
  redis.call('del', phase_key)
  if token then
    keep_token(token, last_key, now)
  end
end

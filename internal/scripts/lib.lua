-- lib: helpers shared by the lock scripts. The Go side prepends this file to
-- every script that uses it, so each script is still one self-contained EVAL.

-- Server time in microseconds (below 2^53, so exact in Lua numbers).
local function now_us()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The next fencing token: a hybrid logical clock, server time in microseconds
-- but never at or below the last token issued for the name (token_key).
local function next_token(token_key)
  local token = now_us()
  local last = tonumber(redis.call('get', token_key) or '0')
  if last >= token then
    token = last + 1
  end
  return token
end

-- How long keep_token keeps the last token after a release, counted from the
-- later of the release and the moment the server clock passes the token
-- (ms): the largest clock step back, or clock lag of a promoted replica,
-- that the next grant's token still rises across (docs/layout.md).
local KEEP_TOKEN_MS = 10000

-- Called when a lock's hash (which held the last token) is deleted: keep the
-- token in token_key until the server clock has passed it by KEEP_TOKEN_MS,
-- and for at least KEEP_TOKEN_MS, so the next grant still exceeds it — also
-- after the clock stepped back during the hold (the token is then ahead of
-- the clock). Redis keeps the expiry as an absolute time and replicates it
-- so (SET PX travels as PXAT), so the bound is the same on a promoted
-- replica: a master that is still up deletes the key by its own clock, and a
-- replica that takes over keeps it until its clock passes that time.
-- now, optional, is the server's time in µs as the caller read it (before
-- its first write, where an ACL that denies TIME must refuse it whole).
local function keep_token(token, token_key, now)
  if token <= 0 then
    return
  end
  local ahead_ms = math.ceil((token - (now or now_us())) / 1000)
  if ahead_ms < 0 then
    ahead_ms = 0
  end
  redis.call('set', token_key, string.format('%.0f', token), 'PX', ahead_ms + KEEP_TOKEN_MS)
end

-- The common paths (a free lock, the release of a hold's last count) call
-- only these helpers, pass Redis strings rather than Lua numbers (Redis 7.0
-- prints each number argument with a printf), and answer nil, having
-- written nothing, for anything else: their script's rare paths then check
-- it all again and answer it. rlock_acquire.lua and rlock_release.lua
-- carry them written out (a helper's call costs about 1k instructions a
-- script call; rlock's pair is the one measured against Redisson's bare
-- pair): a change here goes there too.

-- Grant the lock hash at lock to owner for lease ms (a decimal) with a
-- fresh token, in the rlock layout, when EXISTS counted none of the
-- primitive's keys (exists 0), or one that GET shows is the last-token key
-- at token_key: a decimal with an expiry (what check_own accepts) in
-- canonical form, no leading zero, so that comparing it with the server
-- time as strings (length first) compares numbers; any other decimal takes
-- the rare path, which compares numbers. Only PEXPIRE takes an ACL check (a
-- denied HSET, the first write, leaves nothing written). Returns the token
-- in decimal, or nil.
local function grant_free(exists, lock, token_key, owner, lease)
  local redis = redis -- a global costs a lookup each time (about 120 instructions)
  local last = exists == 1 and redis.pcall('get', token_key)
  if not (exists == 0 or (type(last) == 'string' and string.match(last, '^[1-9]%d*$')
      and redis.call('pttl', token_key) > 0)) then
    return nil
  end
  if redis.acl_check_cmd and not redis.acl_check_cmd('pexpire', lock) then
    return nil
  end
  local now = redis.call('time') -- server time in µs, in decimal:
  local t = #now[2] == 6 and now[1] .. now[2] or now[1] .. string.sub('00000' .. now[2], -6)
  if last and (#t < #last or (#t == #last and t <= last)) then -- t <= last
    t = string.format('%.0f', tonumber(last) + 1)
  end
  if type(redis.pcall('hset', lock, owner, '1', 'redisync:token', t)) ~= 'number' then
    return nil
  end
  redis.call('pexpire', lock, lease)
  return t
end

-- Keep token (a decimal), a released hold's, in token_key as keep_token
-- does, on a release's common path: while the token is behind the server
-- clock, with SET NX GET, the first write: it writes only where there is no
-- key, and otherwise shows the string there, written over only when it is
-- ours (a decimal with an expiry); a key of another type, a denial or out
-- of memory write nothing. Returns true once the token is kept, or nil,
-- having written nothing (the caller's rare path then keeps it).
local function keep_last(token_key, token)
  local redis = redis -- as in grant_free
  local now = redis.call('time') -- server time in µs, in decimal:
  now = #now[2] == 6 and now[1] .. now[2] or now[1] .. string.sub('00000' .. now[2], -6)
  if #token > #now or (#token == #now and token > now) then -- token > now
    return nil
  end
  local last = redis.pcall('set', token_key, token, 'PX', '10000', 'NX', 'GET') -- KEEP_TOKEN_MS
  if last and type(last) == 'string' and string.match(last, '^%d+$') and redis.call('pttl', token_key) > 0 then
    redis.call('set', token_key, token, 'PX', '10000')
    return true
  end
  return last == false or nil
end

-- Release owner's last hold of the lock hash at lock, whose token (a
-- decimal) the hash carries and which has no "mode": a hash that carries a
-- hold's token is that lock (no one else writes the field), unless a
-- Redisson RReadWriteLock reader joined it (Redisson takes a hash without
-- "mode" for free, and writes "mode" and its count): a read-write lock's
-- hash now, which the rare path leaves alone. The token is kept first
-- (keep_last); only DEL, the second write, takes an ACL check. Returns
-- true, or nil.
local function release_last(lock, token_key, owner, token)
  local v = redis.pcall('hmget', lock, owner, 'redisync:token', 'mode')
  if not (v[1] == '1' and v[2] == token and not v[3]) or (redis.acl_check_cmd and not redis.acl_check_cmd('del', lock))
      or not keep_last(token_key, token) then
    return nil
  end
  redis.call('del', lock)
  return true
end

-- Out of memory, Redis refuses a script without a shebang (a release, a
-- renewal: script.go, shebangWrite) at its first write that may grow memory
-- (HINCRBY, ZADD, HSET, SET) unless it has written before. touch writes
-- key's own expiry again (PEXPIRE, never refused for memory), so that the
-- writes after it, which must not grow memory (a decrement, a new score for
-- a member), run under OOM too.
local function touch(key)
  local pttl = redis.call('pttl', key)
  if pttl > 0 then
    redis.call('pexpire', key, pttl)
  end
end

-- Raise key's expiry to at least ms; never shorten it, never touch a key
-- without expiry.
local function extend(key, ms)
  local pttl = redis.call('pttl', key)
  if pttl >= 0 and pttl < ms then
    redis.call('pexpire', key, ms)
  end
end

-- Give key an expiry of at least ms, also when it has none yet (a key this
-- library created, such as a wait queue, must never outlive its users).
local function expire_at_least(key, ms)
  local pttl = redis.call('pttl', key)
  if pttl == -1 or pttl < ms then
    redis.call('pexpire', key, ms)
  end
end

-- For operator scripts (force unlock): the reply to give at once when key
-- holds no lock — 0 when absent, an error when it is not a hash — or nil
-- when it is a hash to act on.
local function unless_hash(key)
  local kind = redis.call('type', key)['ok']
  if kind == 'none' then
    return 0
  end
  if kind ~= 'hash' then
    return redis.error_reply('WRONGTYPE key is a ' .. kind .. ', not a lock')
  end
  return nil
end

-- Lock layout (rlock, fairlock): a hash with field <owner> = hold count and
-- field "redisync:token" = the hold's fencing token.

-- Create the lock for owner with a fresh token; returns the acquire reply.
local function grant(key, owner, lease, token_key)
  local token = next_token(token_key)
  redis.call('hset', key, owner, 1, 'redisync:token', string.format('%.0f', token))
  redis.call('pexpire', key, lease)
  return {token, 1}
end

-- Nest one more hold of owner, who holds key; returns the acquire reply.
-- A hold a Redisson client began (same owner id) has no token yet: the
-- re-entry draws one from token_key and records it, so Token is a real
-- fencing token there too (issue 16).
local function reenter(key, owner, lease, non_reentrant, token_key)
  if non_reentrant == '1' then
    return redis.error_reply('NON_REENTRANT lock already held by this owner')
  end
  local count = redis.call('hincrby', key, owner, 1)
  -- Re-entering never shortens the lease an outer hold relies on.
  extend(key, lease)
  local token = tonumber(redis.call('hget', key, 'redisync:token') or '0')
  if token == 0 and token_key then
    token = next_token(token_key)
    redis.call('hset', key, 'redisync:token', string.format('%.0f', token))
  end
  return {token, count}
end

-- Latches, for owners that several handles share (WithOwner, or a Redisson
-- client on the same owner id). The owner's count then is not one handle's
-- alone, so a handle cannot tell from it whether its own release already
-- ran. Each such handle names a field of the lock hash, latch =
-- "redisync:latch:<handle id>", where its last acquire or release leaves
-- "<request id> <outcome>": "a" (an acquire granted), "u" (that acquire was
-- undone, or refused before it ran), "r <acted> <count>" (a release). A
-- handle's operations are serialized, so one field per handle is enough. It
-- goes with the release that ends the handle's last hold (release_hold's
-- last), or with the hash. An empty latch (unique owners) turns this off.

-- The outcome recorded for request req in latch, or nil.
local function latch_get(key, latch, req)
  if latch == nil or latch == '' then
    return nil
  end
  local v = redis.call('hget', key, latch)
  if not v then
    return nil
  end
  local r, rest = string.match(v, '^(%S+) (.*)$')
  if r ~= req then
    return nil
  end
  return rest
end

-- Record outcome for request req in latch, while the lock exists (a latch
-- never creates a hash).
local function latch_set(key, latch, req, outcome)
  if latch ~= nil and latch ~= '' and redis.call('exists', key) == 1 then
    redis.call('hset', key, latch, req .. ' ' .. outcome)
  end
end

-- The latch goes: request req ends the handle's last hold (last), or the
-- handle's hold is gone. Where the ACL denies HDEL the latch records req's
-- outcome instead, as for any other release.
local function latch_end(key, latch, req, outcome)
  if redis.acl_check_cmd and not redis.acl_check_cmd('hdel', key) then
    latch_set(key, latch, req, outcome)
    return
  end
  redis.call('hdel', key, latch)
end

-- Undo one hold (or all, or holds of them with expected 0) of owner per the
-- release contract (see rlock_release.lua). last is true when req ends the
-- handle's last hold, which its latch recorded (a latched acquire of the
-- hold granted), or undoes an acquire of a handle that holds nothing else:
-- the latch then goes, and a retried release (of a hold with a token) that
-- finds no latch while the lock still carries its token knows that its
-- first send removed it. Returns the reply, and true when the lock was
-- deleted.
local function release_hold(key, owner, lease, expected, token_key, token, latch, req, holds, last)
  holds = math.max(holds or 1, 1)
  last = last and latch ~= nil and latch ~= ''
  local seen = latch_get(key, latch, req)
  if expected == -2 then
    -- Undo of acquire req: act only if it granted, and never twice; mark it
    -- undone first so that the acquire, should it still arrive, refuses.
    if seen ~= 'a' then
      latch_set(key, latch, req, 'u')
      return {0, tonumber(redis.call('hget', key, owner) or '0') or 0}, false
    end
    expected, holds = 0, 1
  elseif seen and string.sub(seen, 1, 2) == 'r ' then
    -- A retry of a release that already ran: replay its outcome.
    local acted, count = string.match(seen, '^r (%d+) (%d+)$')
    return {tonumber(acted), tonumber(count)}, false
  end
  local count = tonumber(redis.call('hget', key, owner) or '0') or 0
  local current = tonumber(redis.call('hget', key, 'redisync:token') or '0') or 0
  if last and token and token > 0 and count > 0 and current == token
      and redis.call('hexists', key, latch) == 0 then
    -- The hold's latch is gone and its hash is not: the first send of req
    -- ran (and removed it), and the count left is the other handles'.
    return {1, count}, false
  end
  if count == 0 or (expected > 0 and count ~= expected)
      or (token and token > 0 and current ~= token) then
    -- Not this hold: absent, a count other than expected, or a later hold
    -- of the same owner (another token, or none: a hash Redisson created
    -- after ours was deleted; every hold of ours records its token, also
    -- when it re-enters a hold Redisson began).
    if last then
      latch_end(key, latch, req, 'r 0 ' .. count)
    else
      latch_set(key, latch, req, 'r 0 ' .. count)
    end
    return {0, count}, false
  end
  if expected > 0 then
    holds = 1
  end
  if expected >= 0 and count > holds then
    touch(key) -- a decrement does not grow memory: let it run under OOM
    redis.call('hincrby', key, owner, -holds)
    extend(key, lease)
    if last then
      latch_end(key, latch, req, 'r 1 ' .. (count - holds))
    else
      latch_set(key, latch, req, 'r 1 ' .. (count - holds))
    end
    return {1, count - holds}, false
  end
  redis.call('del', key)
  keep_token(current, token_key)
  return {1, 0}, true
end

-- For acquire scripts of a handle with a latch: true when request req was
-- already seen (undone before it arrived): such an acquire must not grant.
local function latch_refuses(key, latch, req)
  return latch_get(key, latch, req) ~= nil
end

-- Record that acquire req granted (reply res is {token, count}).
local function latch_granted(key, latch, req, res)
  if type(res) == 'table' and res.err == nil then
    latch_set(key, latch, req, 'a')
  end
  return res
end

-- Fair queue (fairlock): zset queue (owner -> arrival) and zset heartbeats
-- (owner -> deadline in server ms).

-- Drop every waiter whose heartbeat deadline is at or before now_ms;
-- returns true when there was one.
local function drop_dead_waiters(queue, heartbeats, now_ms)
  local dead = redis.call('zrangebyscore', heartbeats, '-inf', now_ms)
  for _, owner in ipairs(dead) do
    redis.call('zrem', queue, owner)
  end
  if #dead > 0 then
    redis.call('zremrangebyscore', heartbeats, '-inf', now_ms)
  end
  return #dead > 0
end

-- Tell the first waiter, if any, that the lock is free.
-- notify publishes a wake-up. A failed PUBLISH (an ACL that denies it, a
-- channel pattern the user may not use) must not abort the script after
-- its writes: the release stands, and waiters fall back to their bounded
-- poll.
local function notify(publish, channel, message)
  redis.pcall(publish, channel, message)
end

local function wake_head(queue, channel_prefix, publish)
  local head = redis.call('zrange', queue, 0, 0)[1]
  if head then
    notify(publish, channel_prefix .. ':' .. head, '0')
  end
end

-- The waiter channel prefix of the semaphore whose queue zset is queue:
-- keys.Derived names the two alike, "redisync_sem_queue:{H}:S" and
-- "redisync_sem_channel:{H}:S", so the channel, no key, is no argument of
-- the scripts (an argument costs Redis about 1.5k instructions).
local function sem_channel(queue)
  return 'redisync_sem_channel' .. string.sub(queue, 19)
end

-- Add owner to a wait queue at the tail, unless it already has a place, and
-- heartbeat it: its place lapses at now_ms + wait unless refreshed. Both
-- zsets live at least as long as the longest waiter's timeout.
local function join_queue(queue, heartbeats, owner, now, now_ms, wait)
  if not redis.call('zscore', queue, owner) then
    local arrival = now
    local tail = redis.call('zrange', queue, -1, -1, 'withscores')
    if tail[2] and tonumber(tail[2]) >= arrival then
      arrival = tonumber(tail[2]) + 1
    end
    redis.call('zadd', queue, string.format('%.0f', arrival), owner)
  end
  redis.call('zadd', heartbeats, now_ms + wait, owner)
  expire_at_least(queue, wait)
  expire_at_least(heartbeats, wait)
end

-- Semaphore holders: zset holders (permit id -> expiry, server ms) and hash
-- permits (permit id -> count, "used" -> total), always updated together
-- and given the same expiry, so they can only vanish together.

-- The two keys' expiry runs ahead of their permits': every write of it
-- gives at least SEM_HORIZON leases and never shortens it, and a renewal
-- writes it again only once a SEM_PERIOD of server time (sem_renew.lua),
-- which leaves at least a lease past the expiry of every permit renewed
-- in between (SEM_HORIZON = SEM_PERIOD + 1).
local SEM_PERIOD = 4
local SEM_HORIZON = 5

-- Take back the permits of every expired holder; returns how many.
local function reclaim(holders, permits, now_ms)
  local expired = redis.call('zrangebyscore', holders, '-inf', now_ms)
  if #expired == 0 then
    return 0
  end
  local freed = 0
  for _, id in ipairs(expired) do
    freed = freed + (tonumber(redis.call('hget', permits, id) or '0') or 0)
    redis.call('hdel', permits, id)
  end
  redis.call('zremrangebyscore', holders, '-inf', now_ms)
  if redis.call('hincrby', permits, 'used', -freed) <= 0 then
    redis.call('del', permits)
  end
  return freed
end

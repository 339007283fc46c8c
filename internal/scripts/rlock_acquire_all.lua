#!lua
-- rlock_acquire_all: take or re-enter several reentrant locks at once, all
-- or none (a multilock whose locks share one server or hash slot). Runs with
-- the helpers of lib.lua and keyspace.lua it uses prepended, those only its
-- rare paths use at their mark (prelude.go). It records no holder records:
-- they come with the first renewal (internal/engine, record.go).
--
-- KEYS[2i-1]  lock hash of lock i (rlock layout)
-- KEYS[2i]    last-token key of lock i
-- ARGV[3i-2]  lease of lock i in ms
-- ARGV[3i-1]  owner id of lock i
-- ARGV[3i]    "1" when lock i is non-reentrant
--
-- Reply: {token1, count1, token2, count2, ...} when every lock was taken
-- (on free names, the tokens in decimal strings); when one is held by
-- another owner, that lock's PTTL and nothing changed; error NON_REENTRANT
-- (nothing changed). Every lock is checked before any is touched, so the
-- reply is all or nothing.
-- Globals cost a lookup in the globals table each (about 120
-- instructions): the script reads them through locals.
local redis, KEYS, ARGV = redis, KEYS, ARGV
local n = #KEYS / 2
-- The common path: every name free (EXISTS counts none of the hashes and
-- last-token keys), granted with one token of the server clock (no last
-- token to rise above). The first HSET, the first write, needs no ACL
-- check (denied, it leaves nothing written: the rare path then answers
-- NOPERM); every write after it is checked before it.
if redis.call('exists', unpack(KEYS)) == 0 then
  local allowed = true
  if redis.acl_check_cmd then
    for i = 1, n do
      local key = KEYS[2 * i - 1]
      if (i > 1 and not redis.acl_check_cmd('hset', key)) or not redis.acl_check_cmd('pexpire', key) then
        allowed = false
        break
      end
    end
  end
  if allowed then
    local now = redis.call('time') -- server time in µs, in decimal:
    local t = #now[2] == 6 and now[1] .. now[2] or now[1] .. string.sub('00000' .. now[2], -6)
    if type(redis.pcall('hset', KEYS[1], ARGV[2], '1', 'redisync:token', t)) == 'number' then
      local reply = {t, 1}
      redis.call('pexpire', KEYS[1], ARGV[1])
      for i = 2, n do
        redis.call('hset', KEYS[2 * i - 1], ARGV[3 * i - 1], '1', 'redisync:token', t)
        redis.call('pexpire', KEYS[2 * i - 1], ARGV[3 * i - 2])
        reply[2 * i - 1], reply[2 * i] = t, 1
      end
      return reply
    end
  end
end
-- Rare paths: a name taken (by this owner: a re-entry; by another: busy),
-- a last token to rise above, keys of another shape, an ACL denial.
for i = 1, n do
  local key, owner = KEYS[2 * i - 1], ARGV[3 * i - 1]
  -- Keys of another shape (keyspace.lua): WRONGKIND, or busy for a
  -- read-write lock or a field of this owner that holds no count.
  local shape = lock_shape(key)
  if shape ~= 'none' and shape ~= 'lock' and shape ~= 'rwlock' then
    return wrong_kind(2 * i - 1, shape)
  end
  local refusal = check_own({{2 * i, 'string', TOKEN}})
    or permitted({{'hset', key}, {'hincrby', key}, {'pexpire', key}})
  if refusal then
    return refusal
  end
  if shape == 'rwlock' or hold_count(key, owner) == nil then
    return redis.call('pttl', key)
  end
  if shape == 'lock' then
    if redis.call('hexists', key, owner) == 0 then
      return redis.call('pttl', key)
    end
    if ARGV[3 * i] == '1' then
      return redis.error_reply('NON_REENTRANT lock already held by this owner')
    end
  end
end
local reply = {}
for i = 1, n do
  local key, lease, owner = KEYS[2 * i - 1], tonumber(ARGV[3 * i - 2]), ARGV[3 * i - 1]
  local r
  if redis.call('exists', key) == 0 then
    r = grant(key, owner, lease, KEYS[2 * i])
  else
    r = reenter(key, owner, lease, '0', KEYS[2 * i])
  end
  reply[2 * i - 1], reply[2 * i] = r[1], r[2]
end
return reply

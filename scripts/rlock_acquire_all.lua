-- rlock_acquire_all: take or re-enter several reentrant locks at once, all
-- or none (a multilock whose locks share one server or hash slot). Runs with
-- lib.lua prepended.
--
-- KEYS[2i-1]  lock hash of lock i (rlock layout)
-- KEYS[2i]    last-token key of lock i
-- ARGV[3i-2]  lease of lock i in ms
-- ARGV[3i-1]  owner id of lock i
-- ARGV[3i]    "1" when lock i is non-reentrant
--
-- Reply: {token1, count1, token2, count2, ...} when every lock was taken;
-- when one is held by another owner, that lock's PTTL and nothing changed;
-- error NON_REENTRANT (nothing changed). Every lock is checked before any
-- is touched, so the reply is all or nothing.
local n = #KEYS / 2
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
    r = reenter(key, owner, lease, '0')
  end
  reply[2 * i - 1], reply[2 * i] = r[1], r[2]
end
return reply

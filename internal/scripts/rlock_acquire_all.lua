#!lua
-- rlock_acquire_all: take or re-enter several reentrant locks at once, all
-- or none (a multilock whose locks share one server or hash slot). Runs with
-- lib.lua prepended.
--
-- KEYS[3i-2]  lock hash of lock i (rlock layout)
-- KEYS[3i-1]  last-token key of lock i
-- KEYS[3i]    holder-info hash of lock i (keyspace.lua: info_record), or
--             its last-token key again for none
-- ARGV[4i-3]  lease of lock i in ms
-- ARGV[4i-2]  owner id of lock i
-- ARGV[4i-1]  "1" when lock i is non-reentrant
-- ARGV[4i]    holder-info payload of lock i ("": none)
--
-- Reply: {token1, count1, token2, count2, ...} when every lock was taken;
-- when one is held by another owner, that lock's PTTL and nothing changed;
-- error NON_REENTRANT (nothing changed). Every lock is checked before any
-- is touched, so the reply is all or nothing.
local n = #KEYS / 3
for i = 1, n do
  local key, owner = KEYS[3 * i - 2], ARGV[4 * i - 2]
  -- Keys of another shape (keyspace.lua): WRONGKIND, or busy for a
  -- read-write lock or a field of this owner that holds no count.
  local shape = lock_shape(key)
  if shape ~= 'none' and shape ~= 'lock' and shape ~= 'rwlock' then
    return wrong_kind(3 * i - 2, shape)
  end
  local refusal = check_own({{3 * i - 1, 'string', TOKEN}}) or (KEYS[3 * i] ~= KEYS[3 * i - 1] and info_refusal(3 * i))
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
    if ARGV[4 * i - 1] == '1' then
      return redis.error_reply('NON_REENTRANT lock already held by this owner')
    end
  end
end
local reply = {}
for i = 1, n do
  local key, lease, owner = KEYS[3 * i - 2], tonumber(ARGV[4 * i - 3]), ARGV[4 * i - 2]
  local r
  local fresh = redis.call('exists', key) == 0
  if fresh then
    r = grant(key, owner, lease, KEYS[3 * i - 1])
  else
    r = reenter(key, owner, lease, '0', KEYS[3 * i - 1])
  end
  if KEYS[3 * i] ~= KEYS[3 * i - 1] then -- the token key in its place: none
    info_record(KEYS[3 * i], owner, ARGV[4 * i], lease, fresh)
  end
  reply[2 * i - 1], reply[2 * i] = r[1], r[2]
end
return reply

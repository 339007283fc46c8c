-- latch_lib: the countdown latch's view of its key, prepended (after
-- lib.lua and keyspace.lua) to every latch script.
--
-- The latch is Redisson's RCountDownLatch layout: a string under the raw
-- name holding the count in decimal, with no expiry; no key means count 0.
-- Anything else under the name — a hash (a lock, a semaphore's
-- configuration, a user's), a list, a string that is no integer — is not a
-- latch: the scripts answer WRONGKIND and never overwrite or delete it. (A
-- user's string that holds an integer is indistinguishable from a latch.)

-- 'none', 'latch', or a description of what is at key. An integer is what
-- DECR accepts: an optional '-', no leading zeros, at most 20 characters.
local function latch_shape(key)
  local t = redis.call('type', key).ok
  if t == 'none' then
    return 'none'
  end
  if t ~= 'string' then
    return 'a ' .. t
  end
  local v = redis.call('get', key)
  if #v > 20 or not (v == '0' or string.match(v, '^%-?[1-9]%d*$')) then
    return 'a string that is no count'
  end
  return 'latch'
end

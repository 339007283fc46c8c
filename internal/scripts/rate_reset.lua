-- rate_reset: forget an identity's history (ratelimit's Reset): delete its
-- key, so that a full burst is admissible at once.
--
-- KEYS[1]  the identity's key (see rate_lib.lua)
--
-- Reply: 1 when a key was deleted, 0 when there was none. Errors:
-- WRONGKIND when the key holds something else (left as it is); NOPERM
-- naming a denied DEL.
local key = KEYS[1]
local v = redis.pcall('get', key)
if not v then
  return 0
end
if not (type(v) == 'string' and #v <= 40 and string.match(v, '^%d+:%d+$')) or redis.call('pttl', key) < 0 then
  return wrong_kind(1, rate_found(key, v))
end
local refusal = permitted({{'del', key}})
if refusal then
  return refusal
end
redis.call('del', key)
return 1

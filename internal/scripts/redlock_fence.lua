#!lua
-- redlock_fence: phase 2 of a Redlock acquisition on one node: raise the
-- node's fencing counter to the token the client chose, while it still
-- holds the lock there. Runs with lib.lua prepended.
--
-- KEYS[1]  lock key
-- KEYS[2]  fencing counter: the highest token fenced on this node; expires
--          a day after the last grant (the clock, which phase 1 also reads,
--          has long passed it by then)
-- ARGV[1]  owner id
-- ARGV[2]  the token
--
-- Reply: 1 when the counter is now at least the token, 0 when the lock is
-- no longer this owner's on this node. A counter of another shape is
-- WRONGKIND, NOPERM names a write the ACL denies (keyspace.lua).
if redis.call('type', KEYS[1]).ok ~= 'string' then
  return 0
end
do
  local refusal = check_own({{2, 'string', TOKEN}}) or permitted({{'set', KEYS[2]}, {'pexpire', KEYS[2]}})
  if refusal then
    return refusal
  end
end
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
local token = tonumber(ARGV[2])
if tonumber(redis.call('get', KEYS[2]) or '0') < token then
  redis.call('set', KEYS[2], string.format('%.0f', token), 'PX', 86400000)
else
  redis.call('pexpire', KEYS[2], 86400000)
end
return 1

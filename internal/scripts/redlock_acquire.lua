#!lua
-- redlock_acquire: phase 1 of a Redlock acquisition on one node. Runs with
-- lib.lua prepended.
--
-- KEYS[1]  lock key (string: the owner id), PX = lease
-- KEYS[2]  the node's fencing counter (string), see redlock_fence.lua
-- KEYS[3]  holder-info hash, optional: field = the key's value
--          (keyspace.lua: info_record)
-- ARGV[1]  owner id
-- ARGV[2]  lease in ms
-- ARGV[3]  holder-info payload to record ("": none)
--
-- Reply: {granted, value, run_id}. granted is 1 when the key was free (or
-- already this owner's: a repeated attempt), and value is then the node's
-- hybrid-logical-clock reading max(counter, server TIME in µs); when busy,
-- granted is 0 and value the holder's PTTL. run_id identifies the server
-- process, so the client can tell that a node restarted (and lost its keys).
--
-- Keys of another shape (keyspace.lua): a string with an expiry is a lock
-- (busy unless it is this owner's); any other key at the name — a hash of
-- another kind of lock, a user's key, a string without expiry — is
-- WRONGKIND. NOPERM names a command the ACL denies (INFO included).
do
  local found = foreign(KEYS[1], 'string')
  local refusal = (found and wrong_kind(1, found)) or check_own({{2, 'string', TOKEN}})
    or (KEYS[3] and info_refusal(3))
    or permitted({{'info'}, {'set', KEYS[1]}, {'pexpire', KEYS[1]}})
  if refusal then
    return refusal
  end
end
local run_id = string.match(redis.call('info', 'server'), 'run_id:(%w+)') or ''
local ok = redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
if not ok then
  if redis.call('get', KEYS[1]) ~= ARGV[1] then
    return {0, redis.call('pttl', KEYS[1]), run_id}
  end
  redis.call('pexpire', KEYS[1], ARGV[2])
end
if KEYS[3] then
  info_record(KEYS[3], ARGV[1], ARGV[3], tonumber(ARGV[2]), ok ~= false and ok ~= nil)
end
local value = math.max(tonumber(redis.call('get', KEYS[2]) or '0'), now_us())
return {1, value, run_id}

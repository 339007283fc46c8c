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
if not KEYS[3] then
  -- The common path: a free key. The reads come first (the node counter
  -- must be ours: none, or a decimal with an expiry, as check_own accepts),
  -- then SET NX, the one write: a denied or refused SET leaves nothing
  -- written, and a key that is there (ours, busy, or foreign) falls through
  -- to the rare paths, as does anything else, before any write.
  local last = redis.pcall('get', KEYS[2])
  local server = redis.pcall('info', 'server')
  if (not last or (type(last) == 'string' and string.match(last, '^%d+$') and redis.call('pttl', KEYS[2]) > 0))
      and type(server) == 'string' then
    local ok = redis.pcall('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
    if type(ok) == 'table' and ok.ok then
      local t = redis.call('time')
      local value = math.max(tonumber(last or '0'), tonumber(t[1]) * 1000000 + tonumber(t[2]))
      return {1, value, string.match(server, 'run_id:(%w+)') or ''}
    end
  end
end
-- Rare paths: the key is there, a holder record, keys of another shape.
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

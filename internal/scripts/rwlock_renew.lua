-- rwlock_renew: extend many read-write lock holds in one call (the watchdog's
-- batch). Its rare path calls rwlock_lib.lua's phase_value, the one helper
-- prepended.
--
-- KEYS[i]      lock hash of hold i (all in one hash slot on a Cluster), i = 1..n
-- ARGV[1]      lease in milliseconds
-- ARGV[4i-2]   field of hold i: "<owner>" for a read hold, "<owner>:write"
--              for a write hold
-- ARGV[4i-1]   the phase key's value hold i expects: its fencing token
--              and, for a read hold, " r", for a write hold " w <field>"
--              (what the acquires write there, rwlock_lib.lua); "0": do
--              not check the token
-- ARGV[4i]     read hold: its first timeout key,
--              "{name}:<owner>:rwlock_timeout:1"; write hold: ""
-- ARGV[4i+1]   the lock's phase key (rwlock_lib.lua), in its slot
--
-- Reply: a string with a byte per hold, "1" for each hold still owned and
-- "0" for each hold that is gone (as rlock_renew.lua). A hold is owned while the hash has "mode" and its field, and its
-- token is the phase's (a phase whose token we do not know — a Redisson
-- client began it — is not held against the hold); a read hold also while
-- every one of its per-hold timeout keys "<prefix>:1".."<prefix>:<count>"
-- is ours: "1" with an expiry. Only this owner's timeout keys are extended,
-- never another reader's, so a crashed reader's share expires however long
-- the others keep reading.
--
-- The common path, a hold of count 1 in its own kind of phase: one HMGET
-- answers "a hash? this hold? in a read phase?" (a write hold: HGET of its
-- field, which only a read-write lock's hash has: no owner id ends with
-- ":write"), one GET (a read hold: MGET, with its timeout key) shows the
-- phase key carries exactly the value the hold expects (so it is ours, and
-- the hold's phase); then PEXPIRE ... GT of the timeout key and the hash,
-- and PEXPIRE of the phase key to the hash's expiry. Anything else (counts above 1, a read under its owner's write,
-- a Redisson phase, the old layout, keys of another type, an expiry that is
-- already longer) takes the rare path, which looks again: the common path
-- writes nothing that the rare path would not write too.
--
-- Every read goes through pcall, and MGET gives nil for a key that is no
-- string: a key of another type, or a denial, makes that hold gone (0)
-- instead of aborting the renewal of every other hold in the batch. GT
-- never shortens an expiry and never gives one to a key without: a string
-- "1" without expiry under a timeout key's name is a user's, not ours, and
-- is left as it is (GT's 0 sends the hold to a PTTL that tells it from a key
-- whose expiry is already longer; the hold is then gone). So nothing but
-- our own keys is written; of a read hold of several counts, the timeout
-- keys before such a key may have been extended, as a renewal a moment
-- earlier would have. The lease is passed on as the string it came in
-- (Redis 7.0 prints a number argument with a printf).
-- Globals cost a lookup each (about 120 instructions): read through locals.
local redis, KEYS, ARGV = redis, KEYS, ARGV
local lease = ARGV[1]

-- How many keys one MGET of the rare path reads (a count that is not a
-- real one cannot make the script build a huge call).
local CHUNK = 100

-- The rare path for hold i: the whole check, then the writes; true when the
-- hold is still owned (and now extended).
local function renew_rare(key, field, expect, first, phase)
  local h = redis.pcall('hmget', key, field, 'mode', 'redisync:token')
  local count = tonumber(h[1])
  if not (count and count > 0 and (h[2] == 'read' or h[2] == 'write')) then
    return false
  end
  local prefix = string.sub(first, 1, -3) -- "<prefix>:1" without ":1"
  local reads = first == '' and 0 or count
  local names = {phase}
  for n = 1, math.min(reads, CHUNK) do
    names[n + 1] = prefix .. ':' .. n
  end
  local v = redis.pcall('mget', unpack(names))
  if v.err then
    return false
  end
  for n = 2, #names do
    if v[n] ~= '1' then
      return false
    end
  end
  for from = CHUNK + 1, reads, CHUNK do
    local more = {}
    for n = from, math.min(reads, from + CHUNK - 1) do
      more[#more + 1] = prefix .. ':' .. n
    end
    local w = redis.pcall('mget', unpack(more))
    if w.err then
      return false
    end
    for n = 1, #more do
      if w[n] ~= '1' then
        return false
      end
    end
  end
  local current = phase_value(key, v[1], h[2], field)
  local known = current or (h[3] and tonumber(string.sub(h[3], 2)))
  if expect ~= '0' and known and known ~= tonumber(string.match(expect, '^%d+')) then
    return false -- a later hold of the same owner
  end
  for n = 1, reads do
    local name = names[n + 1] or prefix .. ':' .. n
    if redis.call('pexpire', name, lease, 'GT') == 0 and redis.call('pttl', name) < 0 then
      return false
    end
  end
  local follow = lease
  if redis.call('pexpire', key, lease, 'GT') == 0 then
    follow = redis.call('pttl', key) -- longer than the lease, or none
  end
  if current and (follow == lease or follow > 0) then
    -- The phase key records this hash's phase: it follows the hash, never
    -- shortened, never given an expiry it has not.
    redis.call('pexpire', phase, follow, 'GT')
  end
  return true
end

local alive = {}
for i = 1, #KEYS do
  local key, field, expect, first, phase = KEYS[i], ARGV[4 * i - 2], ARGV[4 * i - 1], ARGV[4 * i], ARGV[4 * i + 1]
  local ok
  if first == '' then
    ok = redis.pcall('hget', key, field) == '1' and redis.pcall('get', phase) == expect
  else
    local h = redis.pcall('hmget', key, field, 'mode')
    local v = h[1] == '1' and h[2] == 'read' and redis.pcall('mget', phase, first)
    ok = v and v[1] == expect and v[2] == '1' and redis.call('pexpire', first, lease, 'GT') == 1
  end
  if ok and redis.call('pexpire', key, lease, 'GT') == 1 then
    redis.call('pexpire', phase, lease) -- the hash's expiry: the lease
    alive[i] = '1'
  elseif renew_rare(key, field, expect, first, phase) then
    alive[i] = '1'
  else
    alive[i] = '0'
  end
end
return table.concat(alive)

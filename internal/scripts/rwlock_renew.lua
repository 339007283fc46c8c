-- rwlock_renew: extend many read-write lock holds in one call (the watchdog's
-- batch). Runs with lib.lua prepended.
--
-- KEYS[i]      lock hash of hold i (all in one hash slot on a Cluster), i = 1..n
-- ARGV[1]      lease in milliseconds
-- ARGV[4i-2]   field of hold i: "<owner>" for a read hold, "<owner>:write"
--              for a write hold
-- ARGV[4i-1]   fencing token of hold i ("0": do not check the token)
-- ARGV[4i]     read hold: the owner's timeout-key prefix
--              "{name}:<owner>:rwlock_timeout"; write hold: ""
-- ARGV[4i+1]   the lock's phase key (rwlock_lib.lua), in its slot
--
-- Reply: array with 1 for each hold still owned and 0 for each hold that is
-- gone. A read hold is owned while its field and every one of its
-- per-hold timeout keys "<prefix>:1".."<prefix>:<count>" exist; only this
-- owner's timeout keys are extended, never another reader's, so a crashed
-- reader's share expires however long the others keep reading.
--
-- A lock key that is not a hash, or a timeout key that is not a string, is
-- not this lock's any more: that hold is gone. Types are checked before any
-- command that would fail on them (WRONGTYPE), so one such key cannot abort
-- the renewal of every other hold in the batch.
local lease = tonumber(ARGV[1])
local alive = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  local field, token, prefix, phase = ARGV[4 * i - 2], ARGV[4 * i - 1], ARGV[4 * i], ARGV[4 * i + 1]
  local count = 0
  if redis.call('type', key).ok == 'hash' then
    count = tonumber(redis.call('hget', key, field) or '0') or 0
  end
  local ok = count > 0
  local phase_type = redis.call('type', phase).ok
  if ok and token ~= '0' and (phase_type == 'string' or phase_type == 'none') then
    -- A later hold of the same owner has another phase token. (A phase
    -- whose token we do not know — a Redisson client began it — is not
    -- held against the hold.)
    local current = phase_token(key, phase, redis.call('hget', key, 'mode'))
    ok = current == nil or current == tonumber(token)
  end
  if ok and prefix ~= '' then
    for n = 1, count do
      if redis.call('type', prefix .. ':' .. n).ok ~= 'string' then
        ok = false
        break
      end
    end
    if ok then
      for n = 1, count do
        redis.call('pexpire', prefix .. ':' .. n, lease)
      end
    end
  end
  if ok then
    redis.call('pexpire', key, lease, 'GT') -- never shortens, never sets one
    if phase_type == 'string' then
      phase_follow(key, phase)
    end
    alive[i] = 1
  else
    alive[i] = 0
  end
end
return alive

-- sem_renew: extend many permits' leases in one call (the watchdog's
-- batch). Its prelude is lib.lua's two constants of the keys' expiry.
--
-- KEYS[i]      holders zset of permit i (all in one hash slot on a Cluster)
-- ARGV[1]      lease in milliseconds (every permit of the batch has it)
-- ARGV[2], ARGV[3]  the prefixes of the holders and permits keys' names
--              (internal/keys): a semaphore's permits hash is named as
--              its holders zset with the one prefix for the other
-- ARGV[2i+2]   permit id
-- ARGV[2i+3]   the permit's expiry (server ms) as this script last
--              reported it, or "0" when unknown
--
-- Reply: for each permit still held, its expiry (server ms; at least now +
-- lease), and 0 for each permit whose lease ran out or that is gone, as
-- one string: "<expiry> <flags>", then " <other>" for each flag "2", in
-- order. <expiry> is this call's new expiry; a permit's flag is "1" when
-- it now expires then, "2" when at its <other> (an expiry already past
-- the new one: the clock stepped back), "0" when gone (one bulk string
-- costs the server and the client less than an array of n integers). A permit taken back is never revived: the permits of a holder
-- past its expiry are taken back by the next script that reckons with the
-- semaphore (an acquire, a read of its state), and may be handed out
-- again; XX leaves them gone. After the server lost writes (a restart from
-- an older snapshot, a replica promoted behind its master) a permit may
-- hold an expiry older than the one reported here; past it, and before
-- anything takes it back (nobody has seen it free), it is renewed
-- (docs/guarantees.md; TestSemRenewAfterAnOlderSnapshotNeverRenewsAPermitTakenBack).
--
-- One call per permit: ZADD XX GT CH moves its expiry and answers "is it a
-- sorted set, is this permit in it?" (XX never adds a member, so a permit
-- released or taken back stays gone; GT never shortens; through pcall, a
-- holders key of another type makes that permit gone instead of aborting
-- the batch). The expiry reported last answers "not expired": a permit's
-- expiry only rises while it is held (the acquire and this script write
-- it; releases and reclaims remove the member), so one reported earlier
-- is a lower bound. Only without one still in the future (the first
-- renewal, a reply lost, a lease about to run out) is it read (ZSCORE).
-- Numbers go as strings made once per batch (Redis 7.0 prints every
-- number argument with a printf), and decimals of one length compare as
-- strings (no number to parse per permit).
--
-- The two keys' expiry runs ahead of their permits' (SEM_HORIZON leases
-- from the last write of it), so that a permit's renewal raises it only
-- once a SEM_PERIOD: when this renewal and the one that set the permit's
-- expiry (that expiry less a lease: the time it was set, by a renewal or
-- by the acquire) fall in two different periods of server time. Every
-- write of the keys' expiry gives at least SEM_HORIZON = SEM_PERIOD + 1
-- leases and never shortens one (PEXPIRE GT; the acquires give the same),
-- so a renewal in the same period as the write before it finds at least a
-- lease left past its new expiry, and the keys outlive every permit in
-- them. Judged by a lower bound of the permit's expiry, a renewal can
-- only write sooner. Each permit's periods begin at its own phase (one of
-- PHASES, from its id's last character), so that the holds of a Client,
-- renewed in the same rounds, raise their keys' expiry in different ones:
-- ten, as a permit id ends in a decimal (the Client's sequence number), so
-- that each phase has a tenth of the holds and any few rounds raise about
-- as many.
-- A permits key is written only when it is a hash holding this permit
-- (HEXISTS through pcall); anything else there is not this semaphore's
-- and is left alone.
--
-- Out of memory Redis refuses a script without a shebang at its first
-- write that may grow memory (ZADD) unless it has written before: the
-- script first runs PEXPIRE 0 GT, a write that never changes anything (GT
-- never lowers an expiry, and leaves a key without one alone), so that
-- the ZADDs, which move scores and grow nothing, run under OOM too.
-- Globals cost a lookup each (about 120 instructions): read through locals.
local redis, KEYS, ARGV = redis, KEYS, ARGV
local PHASES = 10
local lease = tonumber(ARGV[1])
local holders_prefix, permits_prefix = ARGV[2], ARGV[3]
local now = redis.call('time')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local now_arg = string.format('%.0f', now_ms)
local expiry = now_ms + lease
local expiry_arg = string.format('%.0f', expiry)
local horizon_arg = string.format('%.0f', SEM_HORIZON * lease)
-- periods[k]: in phase k, the expiries set in this period of server time
-- are from [3] up to (not including) [4]; [1] and [2] are the same as
-- decimals, false when they are not of now_arg's length.
local period = SEM_PERIOD * lease
local periods = {}
for k = 0, PHASES - 1 do
  local offset = math.floor(k * period / PHASES)
  local from = math.floor((now_ms - offset) / period) * period + offset + lease
  local from_arg, to_arg = string.format('%.0f', from), string.format('%.0f', from + period)
  if #from_arg ~= #now_arg or #to_arg ~= #now_arg then
    from_arg, to_arg = false, false
  end
  periods[k] = {from_arg, to_arg, from, from + period}
end

-- The reply of a command run through pcall: WRONGTYPE (the key is not
-- this semaphore's: its permit is gone) is false; any other error (an ACL
-- that denies the command) fails the batch, whose permits are then
-- renewed again, as when the server did not answer.
local function checked(reply)
  if type(reply) == 'table' and reply.err then
    if string.sub(reply.err, 1, 9) == 'WRONGTYPE' then
      return false
    end
    error(reply)
  end
  return reply
end

-- The expiry of permit id in the holders zset at key, when it is held and
-- has not expired; else nil.
local function expiry_of(key, id)
  local score = tonumber(checked(redis.pcall('zscore', key, id)))
  if score and score > now_ms then
    return score
  end
  return nil
end

-- Raise the expiry of permit id's keys (the holders zset at key, which
-- holds it, and its permits hash) to SEM_HORIZON leases.
local function raise(key, id)
  redis.call('pexpire', key, horizon_arg, 'GT')
  local permits = permits_prefix .. string.sub(key, #holders_prefix + 1)
  if redis.pcall('hexists', permits, id) == 1 then
    redis.call('pexpire', permits, horizon_arg, 'GT')
  end
end

redis.pcall('pexpire', KEYS[1], '0', 'GT')
local pcall, byte, type = redis.pcall, string.byte, type
local alive, others = {}, {}
for i = 1, #KEYS do
  local key, j = KEYS[i], 2 * i + 2
  local id, known = ARGV[j], ARGV[j + 1]
  local p = periods[(byte(id, -1) or 0) % PHASES]
  local due
  if #known == #now_arg and known > now_arg then
    due = not p[1] or known < p[1] or known >= p[2]
  else
    known = expiry_of(key, id)
    due = known and (known < p[3] or known >= p[4])
  end
  local reply = 0
  if known then
    local moved = pcall('zadd', key, 'XX', 'GT', 'CH', expiry_arg, id)
    if type(moved) ~= 'number' then -- an error reply
      moved = checked(moved)
    end
    if moved == 1 then
      reply = expiry
    elseif moved == 0 then
      -- Gone, or its expiry is already past the new one (the clock
      -- stepped back): the score tells.
      reply = expiry_of(key, id) or 0
    end
    if due and reply ~= 0 then
      raise(key, id)
    end
  end
  if reply == 0 then
    alive[i] = '0'
  elseif reply == expiry then
    alive[i] = '1'
  else
    alive[i] = '2'
    others[#others + 1] = string.format('%.0f', reply)
  end
end
local flags = expiry_arg .. ' ' .. table.concat(alive)
if #others == 0 then
  return flags
end
return flags .. ' ' .. table.concat(others, ' ')

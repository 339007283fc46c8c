-- rate_give_back: give back a reservation of rate_decide.lua ("w") whose
-- caller stopped waiting before its admission time (ratelimit's Wait,
-- when its ctx ends first).
--
-- KEYS[1]  the identity's key (see rate_lib.lua)
-- ARGV[1]  emission interval T in µs
-- ARGV[2]  burst tolerance: burst × T in µs
-- ARGV[3]  n, the events reserved
-- ARGV[4]  end_us: the TAT the reservation set
-- ARGV[5]  gen: the key's generation the reservation saw
--
-- Later reservations were computed from a TAT that included this one, and
-- their callers sleep until their own admission times, which cannot move:
-- the reserved interval [end - n×T, end) becomes a hole that only what
-- comes after it may use. The TAT is lowered by
--
--   credit = min(n×T, burst×T - (TAT - end))
--
-- when that is positive: all of it (back to exactly the state before the
-- reservation) when no reservation came after it, less the more came
-- after, nothing once the events after it fill a burst. Replaying the
-- admissions in time order shows why that never admits more than GCRA
-- allows: each event after the hole, of k events, is admitted at its end
-- minus burst×T, which leaves at most (burst - k)×T of the hole usable, and
-- k×T <= TAT - end. (TestGiveBackNeverAdmitsBeyondGCRA replays random
-- histories.) Nothing is given back once the reservation's admission time
-- (end - burst×T) has come, or when the key's generation changed (a Reset,
-- an expiry): its events were admitted, or the key no longer counts them.
--
-- Reply: the credit in µs (0: nothing given back). Errors: WRONGKIND when
-- the key holds something else; NOPERM naming a denied SET.
local key = KEYS[1]
local v = redis.pcall('get', key)
if not v then
  return 0
end
local stored, gen
if type(v) == 'string' and #v <= 40 then
  stored, gen = string.match(v, '^(%d+):(%d+)$')
end
if not stored or redis.call('pttl', key) < 0 then
  return wrong_kind(1, rate_found(key, v))
end
if gen ~= ARGV[5] then
  return 0
end
local interval, tolerance, n, e = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local tat = tonumber(stored)
local t = redis.call('time')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
if e - tolerance <= now or tat < e then
  return 0
end
local credit = math.min(n * interval, tolerance - (tat - e))
if credit <= 0 then
  return 0
end
local refusal = permitted({{'set', key}})
if refusal then
  return refusal
end
-- new >= end - n×T > now: the key keeps an expiry in the future.
local new = tat - credit
redis.call('set', key, string.format('%.0f', new) .. ':' .. gen, 'PX', string.format('%.0f', math.ceil((new - now) / 1000)))
return credit

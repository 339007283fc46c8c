#!lua
-- rate_decide: one decision of a GCRA rate limiter on the server's clock
-- (ratelimit.Limiter's Allow, AllowN, AllowAtMost and Wait's reservation).
--
-- KEYS[1]  the identity's key: "<tat>:<gen>" (see rate_lib.lua)
-- ARGV[1]  emission interval T: µs per event, a decimal >= 1
-- ARGV[2]  burst tolerance: burst × T in µs
-- ARGV[3]  n, the events asked for (1..burst; AllowAtMost: any n >= 1)
-- ARGV[4]  mode: absent or "" all or nothing (AllowN); "m" as many as
--          admissible, at most n (AllowAtMost); "w" reserve (Wait): the n
--          events are admitted now or at a later time, which the reply says
-- ARGV[5]  "w" only: the longest delay the caller accepts in µs; absent
--          or "-1": any
--
-- GCRA: with now the server's TIME in µs and tat = max(stored TAT, now),
-- n events are admissible when tat + n×T - burst×T <= now; admitting them
-- sets the TAT to tat + n×T. A reservation sets it so whatever the delay
-- (tat + n×T - burst×T - now) and is admitted at that time: reservations
-- are admitted in the order they were made. A denial writes nothing.
--
-- Reply: {admitted, remaining, retry_us, reset_us[, end_us, gen]}:
--   admitted   the events admitted (reserved, for "w"): n or 0; 0..n for "m"
--   remaining  the events admissible at once after this decision
--   retry_us   admitted 0: how long until the request would be admitted;
--              "w" reserved: the delay until its admission; else 0
--   reset_us   how long until the key is idle (a full burst admissible)
--   end_us     "w" reserved: the TAT this reservation set (its end)
--   gen        "w" reserved: the key's generation
-- Errors: "WRONGKIND 1 <found>" when the key holds something else; NOPERM
-- naming SET, the one write, when the ACL denies it (nothing written).
local redis, KEYS, ARGV = redis, KEYS, ARGV
local key = KEYS[1]
local v = redis.pcall('get', key)
local stored, gen
if type(v) == 'string' and #v <= 40 then
  stored, gen = string.match(v, '^(%d+):(%d+)$')
end
if not v or (stored and redis.call('pttl', key) >= 0) then
  local interval, tolerance, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
  local mode = ARGV[4] or ''
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local tat = now
  if stored then
    tat = math.max(tonumber(stored), now)
  else
    gen = string.format('%.0f', now)
  end
  local cost, retry = n, 0
  if mode == 'w' then
    retry = math.max(tat + n * interval - tolerance - now, 0)
    local longest = tonumber(ARGV[5] or '-1')
    if longest >= 0 and retry > longest then
      return {0, math.max(math.floor((now + tolerance - tat) / interval), 0), retry, tat - now}
    end
  elseif mode == 'm' then
    cost = math.min(n, math.floor((now + tolerance - tat) / interval))
    if cost < 1 then
      return {0, 0, tat + interval - tolerance - now, tat - now}
    end
  elseif tat + n * interval - tolerance > now then
    return {0, math.max(math.floor((now + tolerance - tat) / interval), 0), tat + n * interval - tolerance - now, tat - now}
  end
  local new = tat + cost * interval
  local res = redis.pcall('set', key, string.format('%.0f', new) .. ':' .. gen,
    'PX', string.format('%.0f', math.ceil((new - now) / 1000)))
  if type(res) == 'table' and res.err then
    if redis.acl_check_cmd and not redis.acl_check_cmd('set', key) then
      return redis.error_reply('NOPERM redisync: this user may not run SET on a key the rate limiter needs (see the README: Permissions)')
    end
    return res
  end
  local remaining = math.max(math.floor((now + tolerance - new) / interval), 0)
  if mode == 'w' then
    return {cost, remaining, retry, new - now, new, gen}
  end
  return {cost, remaining, 0, new - now}
end
-- Rare paths: something else is under the key.
return wrong_kind(1, rate_found(key, v))

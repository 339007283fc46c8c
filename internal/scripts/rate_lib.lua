-- rate_lib: the rate limiter's view of its key, prepended (after the
-- helpers of lib.lua and keyspace.lua the script uses) to every rate
-- limiter script.
--
-- One identity of one limiter is one string key (keys.Rate), holding
-- "<tat>:<gen>" in decimal: the GCRA's theoretical arrival time (TAT) in
-- server-clock microseconds, and the generation, the server time in µs
-- when the key was created (a reservation names it, so that a give-back
-- never credits a key that was reset or expired and created again since).
-- The key expires at the TAT: from then on it is idle, which is what no key
-- means. Anything else under the key — another type, a string of another
-- shape, a string without expiry — is no limiter state: the scripts answer
-- WRONGKIND and never overwrite or delete it.

-- What is at key, whose GET answered v, when it is no limiter state.
local function rate_found(key, v)
  if type(v) == 'table' then
    return 'a ' .. redis.call('type', key).ok
  end
  if redis.call('pttl', key) < 0 then
    return 'a string without expiry'
  end
  return 'a string that is no rate limiter state'
end

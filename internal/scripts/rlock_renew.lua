-- rlock_renew: extend many holds in one call (the watchdog's batch). It
-- needs no helper, so it runs without a prelude.
--
-- KEYS[i]      lock hash of hold i (all in one hash slot on a Cluster), i = 1..n
-- ARGV[1]      lease in milliseconds
-- ARGV[2i]     owner id of hold i
-- ARGV[2i+1]   fencing token of hold i ("0": do not check the token)
--
-- Reply: array with 1 for each hold still owned (its PTTL is now at least the
-- lease) and 0 for each hold that is gone. A renewal never creates a key,
-- never shortens a lease (PEXPIRE GT: a nested fixed hold may have set a
-- longer one; a key without expiry is left alone), and never extends a later
-- hold of the same owner (its token differs).
--
-- Two calls per hold: one HMGET answers "is it a hash, does the owner hold
-- it, with this token?", and the PEXPIRE. HMGET goes through pcall: a key
-- that is not a hash any more (overwritten with SET, turned into a list) is
-- not this lock, and its WRONGTYPE reply makes that hold gone instead of
-- aborting the renewal of every other hold in the batch.
local lease = ARGV[1]
local alive = {}
for i = 1, #KEYS do
  local key, token = KEYS[i], ARGV[2 * i + 1]
  local got = redis.pcall('hmget', key, ARGV[2 * i], 'redisync:token')
  if got[1] and (token == '0' or got[2] == token) then
    redis.call('pexpire', key, lease, 'GT')
    alive[i] = 1
  else
    alive[i] = 0
  end
end
return alive

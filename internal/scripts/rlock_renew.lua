-- rlock_renew: extend many holds in one call (the watchdog's batch). It
-- needs no helper, so it runs without a prelude.
--
-- KEYS[i]      lock hash of hold i (all in one hash slot on a Cluster), i = 1..n
-- ARGV[1]      lease in milliseconds
-- then, for each hold in turn: its fencing token, and after a token of
--              "0" (none known: do not check it) its owner id (every
--              argument costs the server a Lua string per call)
--
-- Reply: a string with a byte per hold, "1" for each hold still owned (its
-- PTTL is now at least the lease) and "0" for each hold that is gone (one
-- bulk string costs the server and the client less than an array of n
-- integers). A renewal never creates a key,
-- never shortens a lease (PEXPIRE GT: a nested fixed hold may have set a
-- longer one; a key without expiry is left alone), and never extends a later
-- hold of the same owner (its token differs).
--
-- Two calls per hold: one look that answers "is it a hash, does this hold
-- still own it?", and the PEXPIRE. For a hold with a token the look is HGET
-- of "redisync:token": a lock hash that carries the hold's token is that
-- hold's, owner included — the grant writes the owner's count and the
-- token in one HSET, and every script (ours and Redisson's) removes the
-- owner's field of a lock hash only by deleting the hash. A hold without
-- one (a resumed owner, a Redisson hold) is looked at with HEXISTS of its
-- owner. A scalar reply costs the server less than HMGET's array. The look
-- goes through pcall: a key that is not a hash any more (overwritten with
-- SET, turned into a list) is not this lock, and its WRONGTYPE reply makes
-- that hold gone instead of aborting the renewal of every other hold in the
-- batch.
-- Globals cost a lookup in the globals table each (about 120
-- instructions), per hold: the loop reads them through locals.
local rcall, rpcall, KEYS, ARGV = redis.call, redis.pcall, KEYS, ARGV
local lease = ARGV[1]
local alive = {}
local j = 2 -- hold i's first argument
for i = 1, #KEYS do
  local key, token = KEYS[i], ARGV[j]
  local held
  if token == '0' then
    held = rpcall('hexists', key, ARGV[j + 1]) == 1
    j = j + 2
  else
    held = rpcall('hget', key, 'redisync:token') == token
    j = j + 1
  end
  if held then
    rcall('pexpire', key, lease, 'GT')
    alive[i] = '1'
  else
    alive[i] = '0'
  end
end
return table.concat(alive)

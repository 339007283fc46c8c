-- rlock_release: undo one hold (or all holds) of an owner, idempotently.
-- Runs with lib.lua prepended.
--
-- KEYS[1]  lock hash
-- KEYS[2]  lock channel (redisson_lock__channel:{name})
-- KEYS[3]  last-token key
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds, applied when holds remain
-- ARGV[3]  expected hold count before this release:
--            n > 0  act only if the count is n (a repeated call finds n-1 and
--                   does nothing, so a retried release never decrements twice)
--            0      decrement whatever the count (an owner resumed elsewhere)
--            -1     release every hold of the owner (cleanup of a lost hold)
-- ARGV[4]  "publish" or "spublish"
--
-- Reply: {acted, count}: acted is 1 when this call changed the lock, count is
-- the owner's hold count afterwards (0: released, or not held at all).
-- A full release deletes the hash and publishes "0" on the channel.
local reply, deleted = release_hold(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), KEYS[3])
if deleted then
  notify(ARGV[4], KEYS[2], '0')
end
return reply

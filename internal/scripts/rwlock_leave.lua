-- rwlock_leave: a writer that registered as waiting (writer preference) gives
-- up. Runs with lib.lua prepended.
--
-- KEYS[1]  waiting writers (zset)
-- KEYS[2]  channel "redisson_rwlock:{name}"
-- ARGV[1]  "<owner>:write"
-- ARGV[2]  "publish" or "spublish"
--
-- Reply: 1 when the writer was registered. Readers held back by it are woken
-- ("1") to re-check. A zset of another shape (keyspace.lua) is WRONGKIND.
do
  local found = foreign(KEYS[1], 'zset')
  if found then
    return wrong_kind(1, found)
  end
end
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then
  return 0
end
notify(ARGV[2], KEYS[2], '1')
return 1

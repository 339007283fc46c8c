package torture

import (
	"context"
	"strconv"

	"github.com/redis/rueidis"
)

// The protected resource lives on its own Redis server, which is never
// faulted. It holds, per lock name, two counters incremented by the
// critical sections:
//
//   - the fenced one (hash "fenced:<name>": ver, max, owner, stale,
//     conflict) accepts a read-modify-write only with a token at least the
//     highest seen (equal only from the same owner) and the version it read,
//     so a stale holder's write is rejected and no update is lost;
//   - its unfenced twin (string "plain:<name>") is a bare GET then SET, the
//     way an unprotected resource behaves: overlapping holders lose updates.
var fencedWrite = rueidis.NewLuaScript(`
local max = tonumber(redis.call('hget', KEYS[1], 'max') or '0')
local token = tonumber(ARGV[1])
if token < max or (token == max and redis.call('hget', KEYS[1], 'owner') ~= ARGV[2]) then
  redis.call('hincrby', KEYS[1], 'stale', 1)
  return -1
end
local ver = tonumber(redis.call('hget', KEYS[1], 'ver') or '0')
if ver ~= tonumber(ARGV[3]) then
  redis.call('hincrby', KEYS[1], 'conflict', 1)
  return -2
end
redis.call('hset', KEYS[1], 'max', ARGV[1], 'owner', ARGV[2], 'ver', ver + 1)
return ver + 1`)

// Outcomes of a fenced write.
const (
	writeAccepted = iota
	writeStale    // the token was below the highest seen: a stale holder
	writeConflict // the version moved since the read: a concurrent writer
)

type resource struct{ rc rueidis.Client }

func (r resource) readFenced(ctx context.Context, name string) (int64, error) {
	v, err := r.rc.Do(ctx, r.rc.B().Hget().Key("fenced:"+name).Field("ver").Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return v, err
}

// writeFenced tries the fenced read-modify-write; when accepted, ver is the
// version it wrote (the resource's own order of accepted writes).
func (r resource) writeFenced(ctx context.Context, name string, token uint64, owner string, read int64) (outcome int, ver int64, err error) {
	n, err := fencedWrite.Exec(ctx, r.rc, []string{"fenced:" + name},
		[]string{strconv.FormatUint(token, 10), owner, strconv.FormatInt(read, 10)}).AsInt64()
	switch {
	case err != nil:
		return 0, 0, err
	case n == -1:
		return writeStale, 0, nil
	case n == -2:
		return writeConflict, 0, nil
	}
	return writeAccepted, n, nil
}

func (r resource) readPlain(ctx context.Context, name string) (int64, error) {
	v, err := r.rc.Do(ctx, r.rc.B().Get().Key("plain:"+name).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return v, err
}

func (r resource) writePlain(ctx context.Context, name string, v int64) error {
	return r.rc.Do(ctx, r.rc.B().Set().Key("plain:"+name).Value(strconv.FormatInt(v, 10)).Build()).Error()
}

// totals reads the final state of name's counters.
func (r resource) totals(ctx context.Context, name string) (fencedVer, stale, conflict, plain int64, err error) {
	m, err := r.rc.Do(ctx, r.rc.B().Hgetall().Key("fenced:"+name).Build()).AsStrMap()
	if err != nil {
		return
	}
	fencedVer, _ = strconv.ParseInt(m["ver"], 10, 64)
	stale, _ = strconv.ParseInt(m["stale"], 10, 64)
	conflict, _ = strconv.ParseInt(m["conflict"], 10, 64)
	plain, err = r.readPlain(ctx, name)
	return
}

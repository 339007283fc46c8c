package scripts

import (
	"context"
	_ "embed"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
)

// keyspace.lua holds the helpers with which every script recognises its own
// keys (issue 13); withLib prepends it after lib.lua.
//
//go:embed keyspace.lua
var keyspaceSrc string

// script is one of our Lua scripts: run by EVALSHA, EVAL on NOSCRIPT (see
// source for how the digest is learned), with its WRONGKIND replies turned
// into errors naming the key. A script whose file is flagged no-writes goes
// as EVALSHA_RO/EVAL_RO: Redis declares the keys of EVAL and EVALSHA
// read-write whatever the script's flags, so a user whose ACL gives only
// read access to the keys (%R~) was refused an inspection with NOPERM; the
// _RO commands' keys are read-only. A replicated Client sends no WAIT after
// them (they are not EVAL/EVALSHA): a read has nothing for a replica to
// acknowledge.
type script struct{ src *source }

// newScript declares a script; its text (src with lib.lua's helpers, see
// withLib) is assembled at its first use.
func newScript(src string) *script { return &script{src: newSource(src, withLib)} }

// Exec runs the script; see reply.
func (s *script) Exec(ctx context.Context, c rueidis.Client, keys, args []string) reply {
	res := s.src.exec(ctx, c, keys, args)
	return reply{RedisResult: res, err: kindError(res.Error(), keys)}
}

// reply is a script's result whose error, if any, is a *errs.WrongKindError
// for a WRONGKIND reply; the readers the wrappers use report that error.
type reply struct {
	rueidis.RedisResult
	err error
}

func (r reply) Error() error { return r.err }

func (r reply) ToMessage() (rueidis.RedisMessage, error) {
	if r.err != nil {
		return rueidis.RedisMessage{}, r.err
	}
	return r.RedisResult.ToMessage()
}

func (r reply) AsInt64() (int64, error) {
	if r.err != nil {
		return 0, r.err
	}
	return r.RedisResult.AsInt64()
}

func (r reply) ToArray() ([]rueidis.RedisMessage, error) {
	if r.err != nil {
		return nil, r.err
	}
	return r.RedisResult.ToArray()
}

func (r reply) AsIntSlice() ([]int64, error) {
	if r.err != nil {
		return nil, r.err
	}
	return r.RedisResult.AsIntSlice()
}

// kindError turns a script's "WRONGKIND <i> <found>" reply into a
// *errs.WrongKindError naming keys[i-1]; any other error is returned as it
// is. (The script names the key by index: a key may hold bytes an error
// reply cannot carry.)
func kindError(err error, keys []string) error {
	rerr, ok := rueidis.IsRedisErr(err)
	if !ok {
		return err
	}
	rest, ok := strings.CutPrefix(rerr.Error(), "WRONGKIND ")
	if !ok {
		return err
	}
	idx, found, _ := strings.Cut(rest, " ")
	if at := strings.Index(found, " script: "); at >= 0 {
		found = found[:at]
	}
	e := &errs.WrongKindError{Found: found}
	if i, perr := strconv.Atoi(idx); perr == nil && i >= 1 && i <= len(keys) {
		e.Key = keys[i-1]
	}
	return e
}

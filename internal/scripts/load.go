package scripts

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// source is one script's text, assembled at its first use, and its EVALSHA
// digest, which Redis computes: the first command that runs the script
// goes as EVAL together with a SCRIPT LOAD of the same text, and the digest
// SCRIPT LOAD answers serves every later EVALSHA. Nothing is built at init
// and the client computes no SHA-1, so a program that imports redisync runs
// in FIPS 140-only mode (GODEBUG=fips140=only), where crypto/sha1 panics.
//
// The digest depends on the text alone, so one learned from any node serves
// every node; a node whose script cache lacks the script (never sent there,
// SCRIPT FLUSH, restart, failover) answers NOSCRIPT, and the caller sends
// EVAL, which loads it there. A user whose ACL refuses SCRIPT LOAD (NOPERM)
// runs every script by EVAL.
type source struct {
	raw   string
	build func(string) string // raw to the text sent (withLib and its kin)

	once     sync.Once
	text     string
	readOnly bool // the text starts with shebangRead: EVAL_RO, EVALSHA_RO

	sha     atomic.Pointer[string] // nil until SCRIPT LOAD answered
	loading atomic.Bool            // a SCRIPT LOAD is on its way
	denied  atomic.Bool            // SCRIPT LOAD was refused: EVAL only
}

func newSource(raw string, build func(string) string) *source {
	return &source{raw: raw, build: build}
}

func (s *source) assemble() {
	s.once.Do(func() {
		s.text = s.build(s.raw)
		s.readOnly = strings.HasPrefix(s.text, shebangRead+"\n")
	})
}

// Text is the script as sent to Redis.
func (s *source) Text() string {
	s.assemble()
	return s.text
}

// digest is the script's EVALSHA digest, "" while unknown.
func (s *source) digest() string {
	if p := s.sha.Load(); p != nil {
		return *p
	}
	return ""
}

// doMulti sends cmds in one DoMulti. While the digest is unknown (and no
// other call is learning it), a SCRIPT LOAD of the text goes first, routed
// to slotKey's node ("": any node), and the digest is taken from its reply;
// cmds then carry EVAL, which needs no digest. The replies are cmds'.
func (s *source) doMulti(ctx context.Context, c rueidis.Client, slotKey string, cmds ...rueidis.Completed) []rueidis.RedisResult {
	if s.digest() != "" || s.denied.Load() || !s.loading.CompareAndSwap(false, true) {
		return c.DoMulti(ctx, cmds...)
	}
	defer s.loading.Store(false)
	load := c.B().ScriptLoad().Script(s.Text()).Build()
	if slotKey != "" {
		// On a Cluster a keyless command rides with the keyed ones of a
		// batch of one slot and may not join a batch of several: bound to
		// a key's slot, it goes to that slot's master in either.
		load = load.SetSlot(slotKey)
	}
	res := c.DoMulti(ctx, append([]rueidis.Completed{load}, cmds...)...)
	s.learn(res[0])
	return res[1:]
}

// learn records the digest from a SCRIPT LOAD reply. A refusal (NOPERM)
// stops the asking; any other failure leaves it to the next call.
func (s *source) learn(res rueidis.RedisResult) {
	sha, err := res.ToString()
	if err == nil && sha != "" {
		s.sha.Store(&sha)
		return
	}
	if rerr, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(rerr.Error(), "NOPERM") {
		s.denied.Store(true)
	}
}

// command builds one run of the script: EVALSHA (EVALSHA_RO) with the
// digest when it is known, else EVAL (EVAL_RO).
func (s *source) command(c rueidis.Client, keys, args []string) rueidis.Completed {
	if sha := s.digest(); sha != "" {
		return s.evalsha(c, sha, keys, args)
	}
	return s.eval(c, keys, args)
}

func (s *source) evalsha(c rueidis.Client, sha string, keys, args []string) rueidis.Completed {
	s.assemble()
	if s.readOnly {
		return c.B().EvalshaRo().Sha1(sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return c.B().Evalsha().Sha1(sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

func (s *source) eval(c rueidis.Client, keys, args []string) rueidis.Completed {
	s.assemble()
	if s.readOnly {
		return c.B().EvalRo().Script(s.text).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return c.B().Eval().Script(s.text).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// exec runs the script once: EVALSHA, and EVAL on NOSCRIPT; while the
// digest is unknown, EVAL with the SCRIPT LOAD that learns it, in one round
// trip.
func (s *source) exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	if sha := s.digest(); sha != "" {
		res := c.Do(ctx, s.evalsha(c, sha, keys, args))
		if !IsNoScript(res.Error()) {
			return res
		}
		return c.Do(ctx, s.eval(c, keys, args))
	}
	if s.denied.Load() {
		return c.Do(ctx, s.eval(c, keys, args))
	}
	slotKey := ""
	if len(keys) > 0 {
		slotKey = keys[0]
	}
	return s.doMulti(ctx, c, slotKey, s.eval(c, keys, args))[0]
}

package scripts

import (
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
)

//go:embed lib.lua
var libSrc string

// withLib prepends the helpers of lib.lua and keyspace.lua that a script
// uses (prelude.go: assemble) to it (see newScript), and moves the script's shebang
// line, if it has one, to the very first line, where Redis 7 reads it.
func withLib(src string) string {
	return hoistShebang(assemble(src))
}

// Shebang lines (Redis 7 script flags). A script that writes and may grow
// the keyspace (an acquire, a set count, a configuration) starts with
// shebangWrite: Redis then refuses it as a whole, before its first command,
// when used memory is over maxmemory, so out of memory never leaves it
// half-written (without flags Redis refuses only the first write that may
// grow memory, and only when nothing was written before it: rwlock's read
// acquire began with a ZREMRANGEBYSCORE and then grew past maxmemory). A
// script that only reads starts with shebangRead. Releases, renewals, force
// unlocks and queue leaves carry no shebang on purpose: they must run under
// out of memory (a release frees memory; a refused renewal would cost live
// holds their locks), and Redis 7.0 has no flag that lets a write script run
// then short of allow-oom, which would let it grow memory without bound.
// Without a shebang Redis refuses only a first write that may grow memory
// (HINCRBY, HSET, ZADD, SET) before anything was written, so those scripts
// are never half-written either: a release that deletes runs, a decrement of
// a nested hold is refused whole (docs/guarantees.md, Out of memory).
const (
	shebangWrite = "#!lua"
	shebangRead  = "#!lua flags=no-writes"
)

// hoistShebang moves src's one line that begins with "#!lua" to the front
// (a script's file declares its flags; the helpers are prepended before
// it). It panics on two such lines: a programming error caught at init.
func hoistShebang(src string) string {
	var line string
	rest := src
	if strings.HasPrefix(rest, "#!lua") {
		line, rest, _ = strings.Cut(rest, "\n")
	} else if i := strings.Index(rest, "\n#!lua"); i >= 0 {
		var tail string
		line, tail, _ = strings.Cut(rest[i+1:], "\n")
		rest = rest[:i+1] + tail
	} else {
		return src
	}
	if strings.Contains(rest, "\n#!lua") {
		panic("scripts: a script with two shebang lines")
	}
	return line + "\n" + rest
}

// ErrNonReentrant is returned by an acquire when a non-reentrant owner
// already holds the lock.
var ErrNonReentrant = errors.New("scripts: non-reentrant lock already held by this owner")

// ErrUpgrade is returned by RWWriteAcquire when the owner holds read holds
// but no write hold: waiting would wait for itself.
var ErrUpgrade = errors.New("scripts: read-to-write upgrade")

// ErrTooMany is returned by SemAcquire when more permits are requested than
// the semaphore's capacity.
var ErrTooMany = errors.New("scripts: more permits requested than the capacity")

// IsReply reports whether err is an answer from Redis (an error reply or one
// of this package's refusals) rather than a failure to get one. After an
// answer the caller knows the script ran (or did not) and needs no undo.
func IsReply(err error) bool {
	if errors.Is(err, ErrNonReentrant) || errors.Is(err, ErrUpgrade) || errors.Is(err, ErrTooMany) ||
		errors.Is(err, errs.ErrWrongKind) {
		return true
	}
	_, ok := rueidis.IsRedisErr(err)
	return ok
}

// IsNoScript reports whether err is Redis's NOSCRIPT reply.
func IsNoScript(err error) bool {
	rerr, ok := rueidis.IsRedisErr(err)
	return ok && rerr.IsNoScript()
}

// Acquired is the outcome of an acquire script.
type Acquired struct {
	OK    bool
	Token uint64 // fencing token of the hold (OK only)
	Count int64  // hold count after the acquisition (OK only)
	// PTTL is, when busy, how long the caller may have to wait in ms: the
	// holder's remaining lease for most locks, 0 when it runs out within the
	// millisecond; -1 when there is no hint: the key has no expiry (written
	// by someone else without a lease), or no permit of a semaphore is held.
	// engine.Hint turns it into a wait.
	PTTL int64
}

// parseAcquired reads the reply shared by every acquire script: {token,
// count} when acquired (or the token alone, a string, for a first hold: the
// common path's reply costs the server less than an array), an integer wait
// hint when busy, and the refusals
// NON_REENTRANT, UPGRADE and TOO_MANY as error replies.
func parseAcquired(res reply) (Acquired, error) {
	if err := res.Error(); err != nil {
		if rerr, ok := rueidis.IsRedisErr(err); ok {
			switch {
			case strings.HasPrefix(rerr.Error(), "NON_REENTRANT"):
				return Acquired{}, ErrNonReentrant
			case strings.HasPrefix(rerr.Error(), "UPGRADE"):
				return Acquired{}, ErrUpgrade
			case strings.HasPrefix(rerr.Error(), "TOO_MANY"):
				return Acquired{}, fmt.Errorf("%w: %s", ErrTooMany, strings.TrimPrefix(rerr.Error(), "TOO_MANY "))
			}
		}
		return Acquired{}, err
	}
	msg, _ := res.ToMessage()
	if msg.IsInt64() { // busy: the lock's PTTL
		pttl, _ := msg.AsInt64()
		return Acquired{PTTL: pttl}, nil
	}
	if msg.IsString() { // a first hold: its token, in decimal
		s, _ := msg.ToString()
		token, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return Acquired{}, fmt.Errorf("scripts: unexpected acquire reply: %w", err)
		}
		return Acquired{OK: true, Token: token, Count: 1}, nil
	}
	token, count, err := intPair(msg)
	if err != nil {
		return Acquired{}, fmt.Errorf("scripts: unexpected acquire reply: %w", err)
	}
	return Acquired{OK: true, Token: uint64(token), Count: count}, nil
}

// intPair reads a two-integer array reply without allocating (the hot
// paths' replies; rueidis's AsIntSlice would allocate a slice each time).
func intPair(msg rueidis.RedisMessage) (a, b int64, err error) {
	vals, err := msg.ToArray()
	if err != nil {
		return 0, 0, err
	}
	if len(vals) != 2 {
		return 0, 0, fmt.Errorf("%d values, want 2", len(vals))
	}
	if a, err = vals[0].AsInt64(); err != nil {
		return 0, 0, err
	}
	b, err = vals[1].AsInt64()
	return a, b, err
}

// Release expectations for the release scripts (see rlock_release.lua).
const (
	ReleaseAny  = 0  // decrement whatever the count
	ReleaseAll  = -1 // drop every hold of the owner
	ReleaseUndo = -2 // undo the acquire named by the latch request, if it granted
)

// Latch names a handle's latch field in the lock hash and the request an
// acquire or release makes (see lib.lua). The zero Latch is none: the owner
// is used by one handle only, whose expected counts say enough.
type Latch struct {
	Field string // "redisync:latch:<handle id>"
	Req   string // request id, unique among the handle's requests
}

// ReleaseArgs says which release a release script makes.
type ReleaseArgs struct {
	// Expected is the owner's hold count the release requires (n > 0), or
	// ReleaseAny, ReleaseAll or ReleaseUndo.
	Expected int64
	// Token is the fencing token of the hold being released: the script acts
	// only while the lock carries it. 0: any.
	Token uint64
	Latch Latch
	// Holds is how many holds a ReleaseAny release removes (0 or 1: one):
	// the cleanup of a lost hold of an owner that other handles share
	// removes that handle's holds, never theirs.
	Holds int64
	// Last is set when the release ends the last hold of a handle whose
	// latch recorded that hold's grant (and Token is that hold's): the
	// latch field goes with it (see lib.lua, release_hold).
	Last bool
	// Unrecorded is set when the hold wrote no holder record (it ended
	// before its first renewal, or its record was refused): the release is
	// given no holder-info hash, and costs no look at it.
	Unrecorded bool
}

// argv is a release script's ARGV (rlock_release.lua), without the
// trailing arguments that are at their defaults: every argument costs the
// server a Lua string per call, and a plain release of a hold's last count
// needs only the first two.
func (a *ReleaseArgs) argv(owner, leaseMs, publish string) []string {
	args := []string{owner, strconv.FormatUint(a.Token, 10), strconv.FormatInt(a.Expected, 10), publish,
		leaseMs, a.Latch.Field, a.Latch.Req, a.holds(), flag(a.Last)}
	n := len(args)
	for n > 2 && releaseDefault(a, n-1, args[n-1]) {
		n--
	}
	return args[:n]
}

// releaseDefault reports whether argument i of a release with a, of value
// v, means what its absence means to the scripts.
func releaseDefault(a *ReleaseArgs, i int, v string) bool {
	switch i {
	case 2:
		return v == "1"
	case 3:
		return v == "publish"
	case 4:
		return a.Expected == 1 // no hold remains to apply the lease to
	case 5, 6:
		return v == ""
	case 7:
		return v == "1"
	default: // 8
		return v == "0"
	}
}

func (a *ReleaseArgs) holds() string { return strconv.FormatInt(max(a.Holds, 1), 10) }

// Released is the outcome of a release script.
type Released struct {
	Acted bool  // this call changed the lock
	Count int64 // the owner's hold count afterwards
}

// parseReleased reads a release script's reply: {acted, count}, or an
// integer count for a release that acted (the common path's reply).
func parseReleased(res reply) (Released, error) {
	msg, err := res.ToMessage()
	if err != nil {
		return Released{}, err
	}
	if msg.IsInt64() {
		count, _ := msg.AsInt64()
		return Released{Acted: true, Count: count}, nil
	}
	acted, count, err := intPair(msg)
	if err != nil {
		return Released{}, fmt.Errorf("scripts: unexpected release reply: %w", err)
	}
	return Released{Acted: acted == 1, Count: count}, nil
}

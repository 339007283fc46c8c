package scripts

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

var (
	//go:embed rlock_acquire.lua
	rlockAcquireSrc string
	//go:embed rlock_release.lua
	rlockReleaseSrc string
	//go:embed rlock_renew.lua
	rlockRenewSrc string
	//go:embed rlock_force_unlock.lua
	rlockForceUnlockSrc string

	rlockAcquire     = rueidis.NewLuaScript(rlockAcquireSrc)
	rlockRelease     = rueidis.NewLuaScript(rlockReleaseSrc)
	rlockRenew       = rueidis.NewLuaScript(rlockRenewSrc)
	rlockForceUnlock = rueidis.NewLuaScript(rlockForceUnlockSrc)
)

// ErrNonReentrant is returned by LockAcquire when a non-reentrant owner
// already holds the lock.
var ErrNonReentrant = errors.New("scripts: non-reentrant lock already held by this owner")

// LockKeys names the keys of one reentrant lock.
type LockKeys struct {
	Lock    string // the hash, named by the raw lock name
	Channel string // release notifications
	Token   string // last-token key
}

// Acquired is the outcome of LockAcquire.
type Acquired struct {
	OK    bool
	Token uint64 // fencing token of the hold (OK only)
	Count int64  // hold count after the acquisition (OK only)
	// PTTL is the holder's remaining lease when busy: -1 when the key has no
	// expiry (a lock written by someone else without a lease).
	PTTL int64
}

// LockAcquire runs rlock_acquire.lua. leaseMs is the decimal lease in ms.
func LockAcquire(ctx context.Context, c rueidis.Client, k *LockKeys, leaseMs, owner string, nonReentrant bool) (Acquired, error) {
	flag := "0"
	if nonReentrant {
		flag = "1"
	}
	res := rlockAcquire.Exec(ctx, c, []string{k.Lock, k.Token}, []string{leaseMs, owner, flag})
	if err := res.Error(); err != nil {
		if rerr, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(rerr.Error(), "NON_REENTRANT") {
			return Acquired{}, ErrNonReentrant
		}
		return Acquired{}, err
	}
	if pttl, err := res.AsInt64(); err == nil {
		return Acquired{PTTL: pttl}, nil
	}
	pair, err := res.AsIntSlice()
	if err != nil || len(pair) != 2 {
		return Acquired{}, fmt.Errorf("scripts: unexpected acquire reply: %w", err)
	}
	return Acquired{OK: true, Token: uint64(pair[0]), Count: pair[1]}, nil
}

// Release expectations for LockRelease (see rlock_release.lua).
const (
	ReleaseAny = 0  // decrement whatever the count
	ReleaseAll = -1 // drop every hold of the owner
)

// Released is the outcome of LockRelease.
type Released struct {
	Acted bool  // this call changed the lock
	Count int64 // the owner's hold count afterwards
}

// LockRelease runs rlock_release.lua; expected is the hold count the caller
// believes the owner has (or ReleaseAny / ReleaseAll).
func LockRelease(ctx context.Context, c rueidis.Client, k *LockKeys, owner, leaseMs string, expected int64, publish string) (Released, error) {
	res := rlockRelease.Exec(ctx, c, []string{k.Lock, k.Channel, k.Token},
		[]string{owner, leaseMs, strconv.FormatInt(expected, 10), publish})
	pair, err := res.AsIntSlice()
	if err != nil {
		return Released{}, err
	}
	if len(pair) != 2 {
		return Released{}, fmt.Errorf("scripts: unexpected release reply %v", pair)
	}
	return Released{Acted: pair[0] == 1, Count: pair[1]}, nil
}

// LockForceUnlock runs rlock_force_unlock.lua: it reports whether a lock was deleted.
func LockForceUnlock(ctx context.Context, c rueidis.Client, k *LockKeys, publish string) (bool, error) {
	n, err := rlockForceUnlock.Exec(ctx, c, []string{k.Lock, k.Channel, k.Token}, []string{publish}).AsInt64()
	return n == 1, err
}

// RenewItem is one hold in a renewal batch.
type RenewItem struct {
	Key   string
	Owner string
	Token uint64 // 0: do not check the token
}

// LockRenewCommand builds one EVALSHA of rlock_renew.lua for a batch of
// holds that share a hash slot (or a single server).
func LockRenewCommand(c rueidis.Client, leaseMs string, items []RenewItem) rueidis.Completed {
	keys, args := renewArgs(leaseMs, items)
	return c.B().Evalsha().Sha1(rlockRenewSHA).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// LockRenewFallback runs the same batch with EVAL semantics on NOSCRIPT
// (rueidis's Lua.Exec falls back by itself).
func LockRenewFallback(ctx context.Context, c rueidis.Client, leaseMs string, items []RenewItem) rueidis.RedisResult {
	keys, args := renewArgs(leaseMs, items)
	return rlockRenew.Exec(ctx, c, keys, args)
}

// ParseRenew reads a renewal reply: alive[i] for items[i].
func ParseRenew(res rueidis.RedisResult, n int) ([]bool, error) {
	vals, err := res.AsIntSlice()
	if err != nil {
		return nil, err
	}
	if len(vals) != n {
		return nil, fmt.Errorf("scripts: renewal reply has %d entries for %d holds", len(vals), n)
	}
	alive := make([]bool, n)
	for i, v := range vals {
		alive[i] = v == 1
	}
	return alive, nil
}

// IsNoScript reports whether err is Redis's NOSCRIPT reply.
func IsNoScript(err error) bool {
	rerr, ok := rueidis.IsRedisErr(err)
	return ok && rerr.IsNoScript()
}

func renewArgs(leaseMs string, items []RenewItem) (keys, args []string) {
	keys = make([]string, len(items))
	args = make([]string, 1, 1+2*len(items))
	args[0] = leaseMs
	for i, it := range items {
		keys[i] = it.Key
		args = append(args, it.Owner, strconv.FormatUint(it.Token, 10))
	}
	return keys, args
}

var rlockRenewSHA = sha1Hex(rlockRenewSrc)

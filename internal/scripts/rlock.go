package scripts

import (
	"context"
	_ "embed"
	"fmt"

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
	//go:embed rlock_acquire_all.lua
	rlockAcquireAllSrc string

	rlockAcquire     = newScript(rlockAcquireSrc)
	rlockRelease     = newScript(rlockReleaseSrc)
	rlockRenew       = bareRenewScript(rlockRenewSrc, false).withTokenFirst()
	rlockForceUnlock = newScript(rlockForceUnlockSrc)
	rlockAcquireAll  = newScript(rlockAcquireAllSrc)
)

// LockKeys names the keys of one reentrant lock.
type LockKeys struct {
	Lock    string // the hash, named by the raw lock name
	Channel string // release notifications
	Token   string // last-token key
	// Info is the holder-info hash (see redisync.HolderInfo) and Holder
	// what an acquire records there ("": nothing). An empty Info leaves
	// the scripts without one (old callers; nothing recorded or removed).
	Info, Holder string
}

// withInfo appends the holder-info key to a lock's keys when there is one.
func (k *LockKeys) withInfo(keys ...string) []string {
	if k.Info != "" {
		keys = append(keys, k.Info)
	}
	return keys
}

// LockAcquire runs rlock_acquire.lua. leaseMs is the decimal lease in ms.
func LockAcquire(ctx context.Context, c rueidis.Client, k *LockKeys, leaseMs, owner string, nonReentrant bool) (Acquired, error) {
	return LockAcquireLatched(ctx, c, k, leaseMs, owner, nonReentrant, Latch{})
}

// LockAcquireLatched is LockAcquire for a handle with a latch (an owner id
// that several handles may share): the grant is recorded under l.Req.
func LockAcquireLatched(ctx context.Context, c rueidis.Client, k *LockKeys, leaseMs, owner string, nonReentrant bool, l Latch) (Acquired, error) {
	args := trimDefaults([]string{leaseMs, owner, flag(nonReentrant), l.Field, l.Req, ""}, 2, "0", "", "", "")
	return parseAcquired(rlockAcquire.Exec(ctx, c, []string{k.Lock, k.Token}, args))
}

// LockRelease runs rlock_release.lua; expected is the hold count the caller
// believes the owner has (or ReleaseAny / ReleaseAll).
func LockRelease(ctx context.Context, c rueidis.Client, k *LockKeys, owner, leaseMs string, expected int64, publish string) (Released, error) {
	return LockReleaseWith(ctx, c, k, owner, leaseMs, publish, ReleaseArgs{Expected: expected})
}

// LockReleaseWith runs rlock_release.lua with every argument of ReleaseArgs.
func LockReleaseWith(ctx context.Context, c rueidis.Client, k *LockKeys, owner, leaseMs, publish string, a ReleaseArgs) (Released, error) {
	keys := []string{k.Lock, k.Channel, k.Token}
	if !a.Unrecorded {
		keys = k.withInfo(keys...)
	}
	return parseReleased(rlockRelease.Exec(ctx, c, keys, a.argv(owner, leaseMs, publish)))
}

// LockForceUnlock runs rlock_force_unlock.lua: it reports whether a lock was deleted.
func LockForceUnlock(ctx context.Context, c rueidis.Client, k *LockKeys, publish string) (bool, error) {
	n, err := rlockForceUnlock.Exec(ctx, c, k.withInfo(k.Lock, k.Channel, k.Token), []string{publish}).AsInt64()
	return n == 1, err
}

// LockRequest is one lock of a LockAcquireAll.
type LockRequest struct {
	Keys         *LockKeys
	LeaseMs      string
	Owner        string
	NonReentrant bool
}

// LockAcquireAll runs rlock_acquire_all.lua: every lock or none. When busy
// it returns (nil, a wait hint, nil).
func LockAcquireAll(ctx context.Context, c rueidis.Client, reqs []LockRequest) ([]Acquired, Acquired, error) {
	keys := make([]string, 0, 2*len(reqs))
	args := make([]string, 0, 3*len(reqs))
	for _, r := range reqs {
		// No holder-info hash: holder records come with the first renewal
		// (internal/engine, record.go).
		keys = append(keys, r.Keys.Lock, r.Keys.Token)
		args = append(args, r.LeaseMs, r.Owner, flag(r.NonReentrant))
	}
	res := rlockAcquireAll.Exec(ctx, c, keys, args)
	if res.Error() != nil {
		_, err := parseAcquired(res) // maps NON_REENTRANT
		return nil, Acquired{}, err
	}
	if msg, _ := res.ToMessage(); msg.IsInt64() { // busy: a PTTL
		pttl, _ := msg.AsInt64()
		return nil, Acquired{PTTL: pttl}, nil
	}
	vals, err := res.AsIntSlice()
	if err != nil || len(vals) != 2*len(reqs) {
		return nil, Acquired{}, fmt.Errorf("scripts: unexpected acquire-all reply of %d values: %w", len(vals), err)
	}
	out := make([]Acquired, len(reqs))
	for i := range out {
		out[i] = Acquired{OK: true, Token: uint64(vals[2*i]), Count: vals[2*i+1]}
	}
	return out, Acquired{}, nil
}

// trimDefaults leaves out the trailing arguments of args that are at their
// defaults (defaults[i] for args[required+i]), which the scripts read when
// they are absent: every argument costs the server a Lua string per call.
func trimDefaults(args []string, required int, defaults ...string) []string {
	n := len(args)
	for n > required && args[n-1] == defaults[n-1-required] {
		n--
	}
	return args[:n]
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

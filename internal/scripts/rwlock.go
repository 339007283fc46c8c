package scripts

import (
	"context"
	_ "embed"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

var (
	//go:embed rwlock_lib.lua
	rwLibSrc string
	//go:embed rwlock_read_acquire.lua
	rwReadAcquireSrc string
	//go:embed rwlock_read_release.lua
	rwReadReleaseSrc string
	//go:embed rwlock_write_acquire.lua
	rwWriteAcquireSrc string
	//go:embed rwlock_write_release.lua
	rwWriteReleaseSrc string
	//go:embed rwlock_leave.lua
	rwLeaveSrc string
	//go:embed rwlock_force_unlock.lua
	rwForceUnlockSrc string
	//go:embed rwlock_renew.lua
	rwRenewSrc string

	rwReadAcquire  = newScript(withRWLib(rwReadAcquireSrc))
	rwReadRelease  = newScript(withRWLib(rwReadReleaseSrc))
	rwWriteAcquire = newScript(withRWLib(rwWriteAcquireSrc))
	rwWriteRelease = newScript(withRWLib(rwWriteReleaseSrc))
	rwLeave        = newScript(rwLeaveSrc)
	rwlockRenew    = newRenewScript(withRWLib(rwRenewSrc), true).withPhase()
	rwForceUnlock  = newScript(withRWLib(rwForceUnlockSrc))
)

// withRWLib prepends rwlock_lib.lua (the phase key's helpers) to an rwlock
// script; newScript then prepends lib.lua and keyspace.lua before it.
func withRWLib(src string) string {
	return rwLibSrc + "\n" + src
}

// RWKeys names the keys of one read-write lock and one owner.
type RWKeys struct {
	Lock        string // the hash, named by the raw lock name
	Channel     string // "redisson_rwlock:{name}"
	Token       string // last-token key (shared with rlock: "redisync_lock_token:{H}:name")
	Phase       string // the current phase's token, "redisync_rwlock_token:{H}:name" (rwlock_lib.lua)
	Writers     string // zset of waiting writers (writer preference)
	TimeoutBase string // "{name}": read-hold timeout keys are "<base>:<owner>:rwlock_timeout:<n>"
	Timeouts    string // this owner's prefix "<base>:<owner>:rwlock_timeout"
	Owner       string // read field
	WriteField  string // "<owner>:write"
	// Info and Holder: the holder-info hash (field "<owner>" for the read
	// holds, "<owner>:write" for the write hold) and what an acquire
	// records there; Info "" for none (WithHolderInfo(false)). Releases
	// and force-unlocks are given Info whenever it is set.
	Info, Holder string
}

// withInfo appends the holder-info hash to keys when there is one.
func (k *RWKeys) withInfo(keys ...string) []string {
	if k.Info != "" {
		keys = append(keys, k.Info)
	}
	return keys
}

// RWReadAcquire runs rwlock_read_acquire.lua.
func RWReadAcquire(ctx context.Context, c rueidis.Client, k *RWKeys, leaseMs string, nonReentrant bool) (Acquired, error) {
	return parseAcquired(rwReadAcquire.Exec(ctx, c,
		[]string{k.Lock, k.Timeouts, k.Token, k.Writers, k.Phase},
		trimDefaults([]string{leaseMs, k.Owner, k.WriteField, flag(nonReentrant), ""}, 2, k.Owner+":write", "0", "")))
}

// RWReadRelease runs rwlock_read_release.lua (the contract of LockRelease;
// the rwlock scripts take no latch: its shared owners fall back to
// ReleaseAny, with a.Holds, guarded by a.Token against the lock's phase).
func RWReadRelease(ctx context.Context, c rueidis.Client, k *RWKeys, leaseMs string, a ReleaseArgs, publish string) (Released, error) {
	return parseReleased(rwReadRelease.Exec(ctx, c,
		a.withInfo(k, k.Lock, k.Channel, k.Timeouts, k.TimeoutBase, k.Token, k.Phase),
		a.rwArgv(k.Owner, "", publish))) // the lease is unused: read holds keep their own
}

// RWWriteAcquire runs rwlock_write_acquire.lua; waiterTimeoutMs > 0 registers
// a busy writer as waiting (writer preference).
func RWWriteAcquire(ctx context.Context, c rueidis.Client, k *RWKeys, leaseMs string, nonReentrant bool, waiterTimeoutMs string) (Acquired, error) {
	return parseAcquired(rwWriteAcquire.Exec(ctx, c,
		[]string{k.Lock, k.Token, k.Writers, k.Phase},
		trimDefaults([]string{leaseMs, k.WriteField, k.Owner, flag(nonReentrant), waiterTimeoutMs, ""}, 2,
			strings.TrimSuffix(k.WriteField, ":write"), "0", "0", "")))
}

// RWWriteRelease runs rwlock_write_release.lua (the contract of LockRelease).
func RWWriteRelease(ctx context.Context, c rueidis.Client, k *RWKeys, leaseMs string, a ReleaseArgs, publish string) (Released, error) {
	return parseReleased(rwWriteRelease.Exec(ctx, c,
		a.withInfo(k, k.Lock, k.Channel, k.Token, k.Phase),
		a.rwArgv(k.WriteField, leaseMs, publish)))
}

// rwArgv is the ARGV of the rwlock release scripts: field, token, expected
// count, publish, holds, lease, without the trailing ones at their defaults
// (the lease: "" for none, or unused when one hold is expected).
func (a *ReleaseArgs) rwArgv(field, leaseMs, publish string) []string {
	if a.Expected == 1 {
		leaseMs = ""
	}
	return trimDefaults([]string{field, strconv.FormatUint(a.Token, 10), strconv.FormatInt(a.Expected, 10), publish,
		a.holds(), leaseMs}, 2, "1", "publish", "1", "")
}

// RWLeave runs rwlock_leave.lua: it reports whether the writer was waiting.
func RWLeave(ctx context.Context, c rueidis.Client, k *RWKeys, publish string) (bool, error) {
	n, err := rwLeave.Exec(ctx, c, []string{k.Writers, k.Channel}, []string{k.WriteField, publish}).AsInt64()
	return n == 1, err
}

// RWForceUnlock runs rwlock_force_unlock.lua: it reports whether a lock was deleted.
func RWForceUnlock(ctx context.Context, c rueidis.Client, k *RWKeys, publish string) (bool, error) {
	n, err := rwForceUnlock.Exec(ctx, c, k.withInfo(k.Lock, k.Channel, k.Token, k.Phase), []string{publish}).AsInt64()
	return n == 1, err
}

// withInfo is k.withInfo(keys...) for release a: keys alone when the hold
// wrote no holder record.
func (a *ReleaseArgs) withInfo(k *RWKeys, keys ...string) []string {
	if a.Unrecorded {
		return keys
	}
	return k.withInfo(keys...)
}

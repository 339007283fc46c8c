package scripts

import (
	"context"
	_ "embed"
	"strconv"

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

	rlockAcquire     = newScript(rlockAcquireSrc)
	rlockRelease     = newScript(rlockReleaseSrc)
	rlockRenew       = newRenewScript(rlockRenewSrc, false)
	rlockForceUnlock = newScript(rlockForceUnlockSrc)
)

// LockKeys names the keys of one reentrant lock.
type LockKeys struct {
	Lock    string // the hash, named by the raw lock name
	Channel string // release notifications
	Token   string // last-token key
}

// LockAcquire runs rlock_acquire.lua. leaseMs is the decimal lease in ms.
func LockAcquire(ctx context.Context, c rueidis.Client, k *LockKeys, leaseMs, owner string, nonReentrant bool) (Acquired, error) {
	return parseAcquired(rlockAcquire.Exec(ctx, c, []string{k.Lock, k.Token}, []string{leaseMs, owner, flag(nonReentrant)}))
}

// LockRelease runs rlock_release.lua; expected is the hold count the caller
// believes the owner has (or ReleaseAny / ReleaseAll).
func LockRelease(ctx context.Context, c rueidis.Client, k *LockKeys, owner, leaseMs string, expected int64, publish string) (Released, error) {
	return parseReleased(rlockRelease.Exec(ctx, c, []string{k.Lock, k.Channel, k.Token},
		[]string{owner, leaseMs, strconv.FormatInt(expected, 10), publish}))
}

// LockForceUnlock runs rlock_force_unlock.lua: it reports whether a lock was deleted.
func LockForceUnlock(ctx context.Context, c rueidis.Client, k *LockKeys, publish string) (bool, error) {
	n, err := rlockForceUnlock.Exec(ctx, c, []string{k.Lock, k.Channel, k.Token}, []string{publish}).AsInt64()
	return n == 1, err
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

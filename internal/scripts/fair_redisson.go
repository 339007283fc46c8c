package scripts

import (
	"context"
	_ "embed"

	"github.com/redis/rueidis"
)

// The fair lock's scripts for Redisson's queue (fairlock.WithRedissonQueue):
// FairKeys then name Redisson's list as Queue, its deadline zset as
// Heartbeats and "redisson_lock__channel:{N}" as Channel.
var (
	//go:embed fair_redisson_lib.lua
	fairRedissonLibSrc string
	//go:embed fair_redisson_acquire.lua
	fairRedissonAcquireSrc string
	//go:embed fair_redisson_release.lua
	fairRedissonReleaseSrc string
	//go:embed fair_redisson_leave.lua
	fairRedissonLeaveSrc string
	//go:embed fair_redisson_force_unlock.lua
	fairRedissonForceSrc string

	fairRedissonAcquire = newScript(fairRedissonLibSrc + "\n" + fairRedissonAcquireSrc)
	fairRedissonRelease = newScript(fairRedissonLibSrc + "\n" + fairRedissonReleaseSrc)
	fairRedissonLeave   = newScript(fairRedissonLibSrc + "\n" + fairRedissonLeaveSrc)
	fairRedissonForce   = newScript(fairRedissonLibSrc + "\n" + fairRedissonForceSrc)
)

// FairRedissonAcquire runs fair_redisson_acquire.lua: queue "1" waits in
// the queue when busy, "0" (TryLock) never joins it; waitMs is the queue's
// thread wait time.
func FairRedissonAcquire(ctx context.Context, c rueidis.Client, k *FairKeys, leaseMs, owner string, nonReentrant, queue bool, waitMs, publish string, l Latch) (Acquired, error) {
	args := []string{leaseMs, owner, flag(nonReentrant), flag(queue), publish, l.Field, l.Req, "", waitMs}
	return parseAcquired(fairRedissonAcquire.Exec(ctx, c, k.unrecorded().list(), args))
}

// FairRedissonRelease runs fair_redisson_release.lua (the contract of
// LockRelease).
func FairRedissonRelease(ctx context.Context, c rueidis.Client, k *FairKeys, owner, leaseMs, publish string, a ReleaseArgs) (Released, error) {
	return parseReleased(fairRedissonRelease.Exec(ctx, c, k.releasing(a).list(), a.argv(owner, leaseMs, publish)))
}

// FairRedissonLeave runs fair_redisson_leave.lua: it reports whether owner
// was queued.
func FairRedissonLeave(ctx context.Context, c rueidis.Client, k *FairKeys, owner, publish, waitMs string) (bool, error) {
	n, err := fairRedissonLeave.Exec(ctx, c, k.list(), []string{owner, publish, waitMs}).AsInt64()
	return n == 1, err
}

// FairRedissonForceUnlock runs fair_redisson_force_unlock.lua: it reports
// whether a lock was deleted.
func FairRedissonForceUnlock(ctx context.Context, c rueidis.Client, k *FairKeys, publish string) (bool, error) {
	n, err := fairRedissonForce.Exec(ctx, c, k.list(), []string{publish}).AsInt64()
	return n == 1, err
}

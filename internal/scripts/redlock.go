package scripts

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
)

var (
	//go:embed redlock_acquire.lua
	redlockAcquireSrc string
	//go:embed redlock_fence.lua
	redlockFenceSrc string
	//go:embed redlock_release.lua
	redlockReleaseSrc string
	//go:embed redlock_renew.lua
	redlockRenewSrc string
	//go:embed redlock_force_unlock.lua
	redlockForceSrc string

	redlockAcquire = newScript(redlockAcquireSrc)
	redlockFence   = newScript(redlockFenceSrc)
	redlockRelease = newScript(redlockReleaseSrc)
	redlockRenew   = bareRenewScript(redlockRenewSrc, false)
	redlockForce   = newScript(redlockForceSrc)
)

// RedlockKeys names a Redlock's keys on one node.
type RedlockKeys struct {
	Lock    string // string: owner id
	Counter string // the node's fencing counter
	// Info and Holder: the holder-info hash on this node (field = the key's
	// value) and what an acquire records there, as in LockKeys.
	Info, Holder string
}

func (k *RedlockKeys) withInfo(keys ...string) []string {
	if k.Info != "" {
		keys = append(keys, k.Info)
	}
	return keys
}

// RedlockGrant is one node's answer to phase 1.
type RedlockGrant struct {
	Granted bool
	Value   uint64 // granted: the node's clock reading max(counter, TIME µs); busy: the holder's PTTL in ms
	RunID   string // the node's server process
}

// RedlockAcquire runs redlock_acquire.lua on one node.
func RedlockAcquire(ctx context.Context, c rueidis.Client, k *RedlockKeys, owner, leaseMs string) (RedlockGrant, error) {
	vals, err := redlockAcquire.Exec(ctx, c, []string{k.Lock, k.Counter}, []string{owner, leaseMs, ""}).ToArray()
	if err != nil {
		return RedlockGrant{}, err
	}
	if len(vals) != 3 {
		return RedlockGrant{}, fmt.Errorf("scripts: unexpected redlock reply of %d values", len(vals))
	}
	granted, err1 := vals[0].AsInt64()
	value, err2 := vals[1].AsInt64()
	runID, err3 := vals[2].ToString()
	if err1 != nil || err2 != nil || err3 != nil {
		return RedlockGrant{}, fmt.Errorf("scripts: unexpected redlock reply %v", vals)
	}
	return RedlockGrant{Granted: granted == 1, Value: uint64(max(value, 0)), RunID: runID}, nil
}

// RedlockFence runs redlock_fence.lua: whether the node's counter now
// covers token.
func RedlockFence(ctx context.Context, c rueidis.Client, k *RedlockKeys, owner string, token uint64) (bool, error) {
	n, err := redlockFence.Exec(ctx, c, []string{k.Lock, k.Counter}, []string{owner, strconv.FormatUint(token, 10)}).AsInt64()
	return n == 1, err
}

// RedlockRelease runs redlock_release.lua: whether the node's lock was deleted.
func RedlockRelease(ctx context.Context, c rueidis.Client, k *RedlockKeys, owner string) (bool, error) {
	n, err := redlockRelease.Exec(ctx, c, k.withInfo(k.Lock), []string{owner}).AsInt64()
	return n == 1, err
}

// RedlockForceUnlock runs redlock_force_unlock.lua on one node: whether a
// lock was deleted there.
func RedlockForceUnlock(ctx context.Context, c rueidis.Client, k *RedlockKeys) (bool, error) {
	n, err := redlockForce.Exec(ctx, c, k.withInfo(k.Lock), nil).AsInt64()
	return n == 1, err
}

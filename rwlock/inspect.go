package rwlock

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/holderinfo"
	"github.com/redisync/redisync/internal/scripts"
)

// The inspection surface every lock kind shares (IsLocked, HoldCount, TTL,
// Holders, ForceUnlock), over Redisson's RReadWriteLock hash: field
// <owner> counts an owner's read holds, <owner>:write its write holds.

// IsLocked reports whether any owner holds the lock, to read or to write.
func (rw *RWMutex) IsLocked(ctx context.Context) (bool, error) {
	st, err := rw.inspect(ctx, false)
	return st.Shape == engine.ShapeRWLock, err
}

// HoldCount returns how many holds this handle's owner has on the lock in
// Redis, read and write together (0 when it holds none).
func (rw *RWMutex) HoldCount(ctx context.Context) (int, error) {
	st, err := rw.inspect(ctx, false)
	return st.Count(rw.keys.Owner) + st.Count(rw.keys.WriteField), err
}

// TTL returns the lock's remaining lease: 0 when it is not locked.
func (rw *RWMutex) TTL(ctx context.Context) (time.Duration, error) {
	st, err := rw.inspect(ctx, false)
	return st.TTL, err
}

// inspect is the inspection methods' one read of the lock. What is no
// read-write lock under the name — a key of another type, a user's hash, an
// rlock or fair lock, a semaphore — is an error matching
// redisync.ErrWrongKind (a *redisync.WrongKindError naming the key and what
// is there).
func (rw *RWMutex) inspect(ctx context.Context, records bool) (engine.LockState, error) {
	if err := rw.check(ctx); err != nil {
		return engine.LockState{}, err
	}
	st, err := rw.e.ReadLock(ctx, rw.name, records)
	if err == nil {
		err = st.ExpectShape(rw.name, engine.ShapeRWLock)
	}
	if err != nil {
		return engine.LockState{}, fmt.Errorf("rwlock %q: %w", rw.name, err)
	}
	return st, nil
}

// Holders returns the lock's current holds: one per owner and mode (Mode
// "read" or "write"; a writer that also reads shows twice), with what each
// recorded about itself (redisync.HolderInfo; nil for a Redisson hold or a
// Client that records nothing). TTL is the hash's remaining lease.
// Anything that is no read-write lock under the name is an error matching
// redisync.ErrWrongKind.
func (rw *RWMutex) Holders(ctx context.Context) ([]redisync.Holder, error) {
	st, err := rw.inspect(ctx, true)
	if err != nil {
		return nil, err
	}
	hs := st.Holders()
	out := make([]redisync.Holder, len(hs))
	for i, h := range hs {
		owner, mode := h.Owner, "read"
		if o, ok := strings.CutSuffix(owner, ":write"); ok {
			owner, mode = o, "write"
		}
		out[i] = redisync.Holder{Owner: owner, Mode: mode, Count: h.Count, TTL: h.TTL, Info: (*redisync.HolderInfo)(holderinfo.Parse(h.Info))}
	}
	return out, nil
}

// ForceUnlock deletes the read-write lock, with every read and write hold
// on it, wakes every waiter, and reports whether there was a lock to
// delete. The former holders find out at their next renewal. It is an
// operator's tool: a correct program releases with Unlock and RUnlock.
func (rw *RWMutex) ForceUnlock(ctx context.Context) (bool, error) {
	if err := rw.check(ctx); err != nil {
		return false, err
	}
	return engine.WithInfoKey(rw.e, rw.name, func(info string) (bool, error) {
		k := rw.keys
		k.Info = info
		return scripts.RWForceUnlock(ctx, rw.e.RC, &k, rw.e.Publish)
	})
}

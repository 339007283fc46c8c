package fairlock

import (
	"context"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/holderinfo"
	"github.com/redisync/redisync/internal/scripts"
)

// The inspection surface every lock kind shares (IsLocked, HoldCount, TTL,
// Holders, ForceUnlock); Queue and HoldCount are in mutex.go.

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	st, err := m.read(ctx, false)
	return st.Shape == engine.ShapeLock, err
}

// TTL returns the lock's remaining lease: 0 when it is not locked.
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	st, err := m.read(ctx, false)
	return st.TTL, err
}

// read is the inspection methods' one read of the lock. What is no fair
// lock under the name — a key of another type, a user's hash, a read-write
// lock, a semaphore — is an error matching redisync.ErrWrongKind (a
// *redisync.WrongKindError naming the key and what is there).
func (m *Mutex) read(ctx context.Context, records bool) (engine.LockState, error) {
	if err := m.check(ctx); err != nil {
		return engine.LockState{}, err
	}
	return m.e.ReadLockAs(ctx, "fairlock", m.name, records)
}

// Holders returns the lock's current holder (at most one; its count may be
// above one) with what it recorded about itself (redisync.HolderInfo; nil
// when nothing was recorded). Waiters are Queue's. Anything that is no fair
// lock under the name is an error matching redisync.ErrWrongKind.
func (m *Mutex) Holders(ctx context.Context) ([]redisync.Holder, error) {
	st, err := m.read(ctx, true)
	if err != nil {
		return nil, err
	}
	hs := st.Holders()
	out := make([]redisync.Holder, len(hs))
	for i, h := range hs {
		out[i] = redisync.Holder{Owner: h.Owner, Count: h.Count, TTL: h.TTL, Info: (*redisync.HolderInfo)(holderinfo.Parse(h.Info))}
	}
	return out, nil
}

// ForceUnlock deletes the fair lock whoever holds it, wakes the first
// waiter, and reports whether there was a lock to delete. The former holder
// finds out at its next renewal (its Done closes with ErrLockLost). The
// queue is kept. It is an operator's tool: a correct program releases with
// Unlock.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	return engine.WithInfoKey(m.e, m.name, func(info string) (bool, error) {
		k := m.keys
		k.Info = info
		if m.redissonWait != "" {
			return scripts.FairRedissonForceUnlock(ctx, m.e.RC, &k, m.e.Publish)
		}
		return scripts.FairForceUnlock(ctx, m.e.RC, &k, m.e.Publish)
	})
}

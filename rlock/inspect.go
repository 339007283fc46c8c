package rlock

import (
	"context"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/holderinfo"
	"github.com/redisync/redisync/internal/scripts"
)

// HoldCount returns how many holds this handle's owner has on the lock in
// Redis (0 when it holds none).
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	st, err := m.read(ctx, false)
	return st.Count(m.owner), err
}

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

// read is the inspection methods' one read of the lock. What is no lock of
// this kind under the name — a key of another type, a user's hash, a
// read-write lock, a semaphore — is an error matching redisync.ErrWrongKind
// (a *redisync.WrongKindError naming the key and what is there).
func (m *Mutex) read(ctx context.Context, records bool) (engine.LockState, error) {
	if err := m.check(ctx); err != nil {
		return engine.LockState{}, err
	}
	return m.e.ReadLockAs(ctx, "rlock", m.name, records)
}

// Holders returns the lock's current holders with what each recorded about
// itself (redisync.HolderInfo; nil for a Redisson hold or a Client that
// records nothing). An rlock has at most one holder, whose count may be
// above one (re-entry, or handles sharing an owner id: they share one
// record, the first one's). TTL is the lock's remaining lease. A lock that is
// not held gives none; anything that is no rlock under the name (a key of
// another type, a user's hash, another kind's lock) is an error matching
// redisync.ErrWrongKind.
func (m *Mutex) Holders(ctx context.Context) ([]redisync.Holder, error) {
	st, err := m.read(ctx, true)
	if err != nil {
		return nil, err
	}
	return holders(st.Holders()), nil
}

func holders(hs []engine.LockHolder) []redisync.Holder {
	out := make([]redisync.Holder, len(hs))
	for i, h := range hs {
		out[i] = redisync.Holder{Owner: h.Owner, Count: h.Count, TTL: h.TTL, Info: (*redisync.HolderInfo)(holderinfo.Parse(h.Info))}
	}
	return out
}

// ForceUnlock deletes the lock whoever holds it, wakes a waiter, and
// reports whether there was a lock to delete. The former holder finds out
// at its next renewal (its Done closes with ErrLockLost); the handle's own
// hold, if any, is lost like any other. It is an operator's tool: a correct
// program releases with Unlock. A key of another type is left alone and
// reported as an error.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	return engine.WithInfoKey(m.e, m.name, func(info string) (bool, error) {
		k := m.keys
		k.Info = info
		return scripts.LockForceUnlock(ctx, m.e.RC, &k, m.e.Publish)
	})
}

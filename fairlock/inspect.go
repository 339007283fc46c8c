package fairlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/scripts"
)

// The inspection surface every lock kind shares (IsLocked, HoldCount, TTL,
// Holders, ForceUnlock); Queue and HoldCount are in mutex.go.

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	n, err := m.e.RC.Do(ctx, m.e.RC.B().Exists().Key(m.name).Build()).AsInt64()
	return n == 1, err
}

// TTL returns the lock's remaining lease: 0 when it is not locked, and a
// negative duration when the key exists without an expiry (written by
// something other than a lock client).
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	if err := m.check(ctx); err != nil {
		return 0, err
	}
	ms, err := m.e.RC.Do(ctx, m.e.RC.B().Pttl().Key(m.name).Build()).AsInt64()
	switch {
	case err != nil:
		return 0, err
	case ms == -2:
		return 0, nil
	case ms == -1:
		return -1, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Holders returns the lock's current holder (at most one; its count may be
// above one) with what it recorded about itself (redisync.HolderInfo; nil
// when nothing was recorded). Waiters are Queue's. A key of another type is
// an error matching redisync.ErrWrongKind.
func (m *Mutex) Holders(ctx context.Context) ([]redisync.Holder, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	hs, err := m.e.LockHolders(ctx, m.name)
	if err != nil {
		return nil, fmt.Errorf("fairlock %q: reading holders: %w", m.name, err)
	}
	out := make([]redisync.Holder, len(hs))
	for i, h := range hs {
		out[i] = redisync.Holder{Owner: h.Owner, Count: h.Count, TTL: h.TTL, Info: redisync.ParseHolderInfo(h.Info)}
	}
	return out, nil
}

// ForceUnlock is the package's ForceUnlock for this lock's name.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	k := m.keys
	k.Info = m.e.HolderInfoKey(m.name) // also when this Client records none
	if m.redissonWait != "" {
		return scripts.FairRedissonForceUnlock(ctx, m.e.RC, &k, m.e.Publish)
	}
	return scripts.FairForceUnlock(ctx, m.e.RC, &k, m.e.Publish)
}

package rwlock

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/scripts"
)

// The inspection surface every lock kind shares (IsLocked, HoldCount, TTL,
// Holders, ForceUnlock), over Redisson's RReadWriteLock hash: field
// <owner> counts an owner's read holds, <owner>:write its write holds.

// IsLocked reports whether any owner holds the lock, to read or to write.
func (rw *RWMutex) IsLocked(ctx context.Context) (bool, error) {
	if err := rw.check(ctx); err != nil {
		return false, err
	}
	n, err := rw.e.RC.Do(ctx, rw.e.RC.B().Exists().Key(rw.name).Build()).AsInt64()
	return n == 1, err
}

// HoldCount returns how many holds this handle's owner has on the lock in
// Redis, read and write together (0 when it holds none).
func (rw *RWMutex) HoldCount(ctx context.Context) (int, error) {
	if err := rw.check(ctx); err != nil {
		return 0, err
	}
	r, err := rw.e.HoldCount(ctx, rw.name, rw.keys.Owner)
	if err != nil {
		return 0, err
	}
	w, err := rw.e.HoldCount(ctx, rw.name, rw.keys.WriteField)
	return r + w, err
}

// TTL returns the lock's remaining lease: 0 when it is not locked, and a
// negative duration when the key exists without an expiry.
func (rw *RWMutex) TTL(ctx context.Context) (time.Duration, error) {
	if err := rw.check(ctx); err != nil {
		return 0, err
	}
	ms, err := rw.e.RC.Do(ctx, rw.e.RC.B().Pttl().Key(rw.name).Build()).AsInt64()
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

// Holders returns the lock's current holds: one per owner and mode (Mode
// "read" or "write"; a writer that also reads shows twice), with what each
// recorded about itself where the rwlock scripts record it (Info nil
// otherwise). TTL is the hash's remaining lease. A key of another type is
// an error matching redisync.ErrWrongKind.
func (rw *RWMutex) Holders(ctx context.Context) ([]redisync.Holder, error) {
	if err := rw.check(ctx); err != nil {
		return nil, err
	}
	hs, err := rw.e.LockHolders(ctx, rw.name)
	if err != nil {
		return nil, fmt.Errorf("rwlock %q: reading holders: %w", rw.name, err)
	}
	out := make([]redisync.Holder, len(hs))
	for i, h := range hs {
		owner, mode := h.Owner, "read"
		if o, ok := strings.CutSuffix(owner, ":write"); ok {
			owner, mode = o, "write"
		}
		out[i] = redisync.Holder{Owner: owner, Mode: mode, Count: h.Count, TTL: h.TTL, Info: redisync.ParseHolderInfo(h.Info)}
	}
	return out, nil
}

// ForceUnlock is the package's ForceUnlock for this lock's name.
func (rw *RWMutex) ForceUnlock(ctx context.Context) (bool, error) {
	if err := rw.check(ctx); err != nil {
		return false, err
	}
	return scripts.RWForceUnlock(ctx, rw.e.RC, &rw.keys, rw.e.Publish)
}

package semaphore

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/holderinfo"
	"github.com/redisync/redisync/internal/lockopt"
	"github.com/redisync/redisync/internal/scripts"
)

// The inspection surface every lock kind shares (IsLocked, HoldCount, TTL,
// Holders, ForceUnlock), read as a semaphore: a "hold" is a Permit, its
// owner the Permit's ID and its count the permits it holds. Available,
// Capacity and Waiting are in semaphore.go.

// Holders lists the acquisitions holding permits, ordered by lease expiry:
// for each, Owner is the Permit's ID ("<client uuid>:<n>"), Count its
// permits, TTL its remaining lease by the server's clock, and Info what it
// recorded about itself (host, pid, program, start, label; nil when its
// Client records nothing). Expired holders are taken back first.
func (s *Semaphore) Holders(ctx context.Context) ([]redisync.Holder, error) {
	if err := s.checkState(ctx); err != nil {
		return nil, err
	}
	st, err := engine.WithInfoKey(s.e, s.name, func(info string) (scripts.SemState, error) {
		k := s.keys
		k.Info = info
		return scripts.SemReadHolders(ctx, s.e.RC, &k, s.capacity, s.e.Publish)
	})
	if err != nil {
		return nil, err
	}
	out := make([]redisync.Holder, len(st.Holders))
	for i, h := range st.Holders {
		lease := time.Duration(h.ExpiryMs-st.NowMs) * time.Millisecond
		out[i] = redisync.Holder{Owner: h.ID, Count: int(h.Permits), TTL: lease, Info: (*redisync.HolderInfo)(holderinfo.Parse(h.Info))}
	}
	return out, nil
}

// IsLocked reports whether any permit is held.
func (s *Semaphore) IsLocked(ctx context.Context) (bool, error) {
	n, err := s.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns how many permits are held, by every holder together
// (a semaphore's handle has no owner of its own; a Permit's count is its
// N).
func (s *Semaphore) HoldCount(ctx context.Context) (int, error) {
	st, err := s.state(ctx, "", false)
	return int(st.Used), err
}

// TTL returns the longest remaining lease among the holders: how long the
// permits held now can last without a renewal. 0 when none is held.
func (s *Semaphore) TTL(ctx context.Context) (time.Duration, error) {
	hs, err := s.Holders(ctx)
	var ttl time.Duration
	for _, h := range hs {
		ttl = max(ttl, h.TTL)
	}
	return ttl, err
}

// ForceUnlock takes back every permit of the semaphore, whoever holds them,
// wakes the first waiter, and reports whether any permit was held. The
// capacity and the queue are kept; the former holders find out at their
// next renewal (their Permits report ErrLockLost). It is an operator's
// tool: a correct program releases its Permits.
func (s *Semaphore) ForceUnlock(ctx context.Context) (bool, error) {
	if err := s.checkState(ctx); err != nil {
		return false, err
	}
	n, err := engine.WithInfoKey(s.e, s.name, func(info string) (int64, error) {
		k := s.keys
		k.Info = info
		return scripts.SemForceRelease(ctx, s.e.RC, &k, s.e.Publish)
	})
	if err != nil {
		return false, fmt.Errorf("semaphore %q: force release: %w", s.name, err)
	}
	return n > 0, nil
}

func (s *Semaphore) checkState(ctx context.Context) error {
	if err := lockopt.Check("semaphore", s.e, s.nameErr, ctx); err != nil {
		return err
	}
	return s.capErr
}

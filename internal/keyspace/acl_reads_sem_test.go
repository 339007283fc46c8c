package keyspace

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/semaphore"
)

// TestSemDeniedReadLeavesNothingWritten: every read command the
// semaphore's scripts run, denied by the ACL (docs/keys-and-permissions.md
// lists them as needed; a user may still lack one), fails a call without
// leaving a write of it behind — TestDeniedCommandLeavesNothingBehind
// denies only the writes.
func TestSemDeniedReadLeavesNothingWritten(t *testing.T) {
	reads := []string{"exists", "hmget", "hget", "pttl", "type", "get", "zrangebyscore", "zrange", "zscore", "zcard", "hexists", "time"}
	calls := []struct {
		name  string
		other bool // another user holds a permit first
		call  func(ctx context.Context, s *semaphore.Semaphore) error
	}{
		{"acquire one", false, func(ctx context.Context, s *semaphore.Semaphore) error { _, _, err := s.TryAcquire(ctx, 1); return err }},
		{"acquire two", false, func(ctx context.Context, s *semaphore.Semaphore) error { _, _, err := s.TryAcquire(ctx, 2); return err }},
		{"acquire beside", true, func(ctx context.Context, s *semaphore.Semaphore) error { _, _, err := s.TryAcquire(ctx, 1); return err }},
		{"capacity", true, func(ctx context.Context, s *semaphore.Semaphore) error { _, err := s.Capacity(ctx); return err }},
		{"set permits", true, func(ctx context.Context, s *semaphore.Semaphore) error { return s.SetPermits(ctx, 5) }},
		{"force unlock", true, func(ctx context.Context, s *semaphore.Semaphore) error { _, err := s.ForceUnlock(ctx); return err }},
	}
	for _, cmd := range reads {
		for _, c := range calls {
			t.Run(fmt.Sprintf("-%s/%s", cmd, c.name), func(t *testing.T) {
				e := newEnv(t)
				e.do(t, "FLUSHALL")
				user := "sem-noread-" + cmd
				cl := e.userClient(t, user, []string{"~*", "&*", "+@all", "-" + cmd}, redisync.WithHolderInfo(false))
				ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
				defer cancel()
				if c.other {
					_, ok, err := semaphore.New(e.c, "aclread:sem", 3, semaphore.WithLease(time.Minute)).TryAcquire(ctx, 1)
					require.NoError(t, err)
					require.True(t, ok)
				}
				before := e.snapshot(t)
				if err := c.call(ctx, semaphore.New(cl, "aclread:sem", 3, semaphore.WithLease(time.Minute))); err == nil {
					return // the call needs no such read
				}
				assert.Empty(t, diff(before, e.snapshot(t)), "the refused call changed Redis: %s", e.describe(t))
			})
		}
	}
}

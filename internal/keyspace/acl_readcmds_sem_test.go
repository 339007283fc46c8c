package keyspace

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// TestSemAcquireDeniedTimeLeavesNothingWritten: TIME is no write, so
// TestDeniedCommandLeavesNothingBehind never denies it, yet an ACL may
// (TIME is only in @fast: "+@read +@write +@scripting" leaves it out). A
// semaphore acquire that is refused for it — the common path (one permit)
// and the rare one (two permits of a new semaphore, or one beside a
// holder, or any with a holder record) — leaves Redis as it was. Its rare
// path read TIME after its first write (the configuration's HSETNX).
func TestSemAcquireDeniedTimeLeavesNothingWritten(t *testing.T) {
	for _, c := range []struct {
		name  string
		n     int
		other bool // another permit is held first (by a user the ACL allows)
		info  bool // the Client records holders (the rare path, always)
	}{
		{"one permit of a new semaphore", 1, false, false},
		{"two permits of a new semaphore", 2, false, false},
		{"one permit beside a holder", 1, true, false},
		{"one permit of a new semaphore, recorded", 1, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			cl := e.userClient(t, "sem-notime", []string{"~*", "&*", "+@all", "-time"}, redisync.WithHolderInfo(c.info))
			ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
			defer cancel()
			if c.other {
				_, ok, err := semaphore.New(e.c, "acltime:sem", 3, semaphore.WithLease(time.Minute)).TryAcquire(ctx, 1)
				require.NoError(t, err)
				require.True(t, ok)
			}
			before := e.snapshot(t)
			_, _, err := semaphore.New(cl, "acltime:sem", 3, semaphore.WithLease(time.Minute)).TryAcquire(ctx, c.n)
			require.Error(t, err, "TIME is denied")
			assert.Empty(t, diff(before, e.snapshot(t)), "the refused acquire changed Redis: %s", e.describe(t))
		})
	}
	// The semaphore's other writing scripts: the state's (Capacity,
	// SetPermits: HSETNX and HSET of the configuration) and the force
	// release's (DEL of the holders, then the queue's waiters).
	for _, c := range []struct {
		name string
		call func(ctx context.Context, s *semaphore.Semaphore) error
	}{
		{"capacity", func(ctx context.Context, s *semaphore.Semaphore) error { _, err := s.Capacity(ctx); return err }},
		{"set permits", func(ctx context.Context, s *semaphore.Semaphore) error { return s.SetPermits(ctx, 5) }},
		{"force unlock", func(ctx context.Context, s *semaphore.Semaphore) error { _, err := s.ForceUnlock(ctx); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			cl := e.userClient(t, "sem-notime", []string{"~*", "&*", "+@all", "-time"}, redisync.WithHolderInfo(false))
			ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
			defer cancel()
			if c.name == "force unlock" {
				_, ok, err := semaphore.New(e.c, "acltime:sem", 3, semaphore.WithLease(time.Minute)).TryAcquire(ctx, 1)
				require.NoError(t, err)
				require.True(t, ok)
			}
			before := e.snapshot(t)
			err := c.call(ctx, semaphore.New(cl, "acltime:sem", 3, semaphore.WithLease(time.Minute)))
			require.Error(t, err, "TIME is denied")
			assert.Empty(t, diff(before, e.snapshot(t)), "the refused call changed Redis: %s", e.describe(t))
		})
	}
}

// TestForceUnlockDeniedTimeLeavesNothingWritten: the locks' force-unlocks,
// run by a user the ACL denies TIME (an operator's tool with "+@read
// +@write +@scripting"), of a lock another user holds. The refused call
// leaves Redis as it was — the lock held, its holder record kept — rather
// than the lock deleted with its last token not kept and its record left.
func TestForceUnlockDeniedTimeLeavesNothingWritten(t *testing.T) {

	for _, c := range []struct {
		name  string
		hold  func(ctx context.Context, c *redisync.Client) error
		force func(ctx context.Context, c *redisync.Client) error
	}{
		{"rlock", func(ctx context.Context, c *redisync.Client) error { return rlock.New(c, "acltime:lock").Lock(ctx) },
			func(ctx context.Context, c *redisync.Client) error {
				_, err := rlock.New(c, "acltime:lock").ForceUnlock(ctx)
				return err
			}},
		{"fairlock", func(ctx context.Context, c *redisync.Client) error { return fairlock.New(c, "acltime:lock").Lock(ctx) },
			func(ctx context.Context, c *redisync.Client) error {
				_, err := fairlock.New(c, "acltime:lock").ForceUnlock(ctx)
				return err
			}},
		{"rwlock", func(ctx context.Context, c *redisync.Client) error { return rwlock.New(c, "acltime:lock").Lock(ctx) },
			func(ctx context.Context, c *redisync.Client) error {
				_, err := rwlock.New(c, "acltime:lock").ForceUnlock(ctx)
				return err
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			cl := e.userClient(t, "lock-notime", []string{"~*", "&*", "+@all", "-time"})
			ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
			defer cancel()
			require.NoError(t, c.hold(ctx, e.c))
			time.Sleep(100 * time.Millisecond) // its holder record written
			before := e.snapshot(t)
			err := c.force(ctx, cl)
			require.Error(t, err, "TIME is denied")
			assert.Empty(t, diff(before, e.snapshot(t)), "the refused force-unlock changed Redis: %s", e.describe(t))
		})
	}
}

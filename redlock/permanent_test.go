package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// TestLockReturnsAPermanentErrorAtOnce: a key of another kind on a majority
// of nodes (a user's string), or an ACL that denies the scripts, makes a
// quorum impossible until someone changes the data or the ACL: Lock returns
// the *QuorumError at once, as rlock returns its error, instead of retrying
// until ctx ends. A permanent error on a minority is not enough: the other
// nodes can still grant (a busy node, below, is only a wait).
func TestLockReturnsAPermanentErrorAtOnce(t *testing.T) {
	t.Run("wrong kind on a majority", func(t *testing.T) {
		ms := startMasters(t, 3)
		for _, s := range ms.srv[:2] {
			redistest.Do(t, s.Client(t), "SET", "perm", "user data")
		}
		m := New(ms.clients, "perm", WithLease(5*time.Second))
		ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
		defer cancel()
		start := time.Now()
		err := m.Lock(ctx)
		assert.Less(t, time.Since(start), 5*time.Second, "Lock retried a permanent error")
		require.ErrorIs(t, err, redisync.ErrWrongKind)
		var q *QuorumError
		require.ErrorAs(t, err, &q)
		assert.NotErrorIs(t, err, context.DeadlineExceeded, "it did not wait for ctx")
		n, _ := redistest.Do(t, ms.raw[2], "EXISTS", "perm").AsInt64()
		assert.Zero(t, n, "the free node's grant was given back")
	})
	t.Run("NOPERM on a majority", func(t *testing.T) {
		ms := startMasters(t, 3)
		for _, s := range ms.srv[:2] {
			redistest.Do(t, s.Client(t), "ACL", "SETUSER", "default", "-evalsha", "-eval")
		}
		m := New(ms.clients, "perm", WithLease(5*time.Second))
		ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
		defer cancel()
		start := time.Now()
		err := m.Lock(ctx)
		assert.Less(t, time.Since(start), 5*time.Second, "Lock retried a permanent error")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "NOPERM")
		assert.False(t, errors.Is(err, context.DeadlineExceeded), "it did not wait for ctx: %v", err)
	})
	t.Run("wrong kind on a minority waits", func(t *testing.T) {
		ms := startMasters(t, 3)
		redistest.Do(t, ms.srv[0].Client(t), "SET", "perm", "user data")
		holder := New(ms.clients[1:], "perm", WithLease(5*time.Second))
		require.NoError(t, holder.Lock(bg()))
		m := New(ms.clients, "perm", WithLease(5*time.Second))
		ctx, cancel := context.WithTimeout(bg(), 700*time.Millisecond)
		defer cancel()
		err := m.Lock(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded, "a quorum is still possible: Lock waits")
		require.NoError(t, holder.Unlock(bg()))
	})
}

package redlock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
)

func TestWithNonReentrantRefusesALockOnAHeldMutexAtOnce(t *testing.T) {
	m := startMasters(t, 3)
	mu := New(m.clients, "nr", WithNonReentrant())
	ctx := context.Background()
	require.NoError(t, mu.Lock(ctx))
	assert.ErrorIs(t, mu.Lock(ctx), redisync.ErrNonReentrant, "no wait for its own hold")
	ok, err := mu.TryLock(ctx)
	assert.False(t, ok)
	assert.ErrorIs(t, err, redisync.ErrNonReentrant)
	require.NoError(t, mu.Unlock(ctx))
	require.NoError(t, mu.Lock(ctx), "free again")
	require.NoError(t, mu.Unlock(ctx))
	assert.Zero(t, m.held(t, "nr"))
	assert.Panics(t, func() { New(m.clients, "nr", WithNonReentrant(), WithReentrant()) })
}

// TestARefusedLeaseWithANodeTimeoutIsErrInvalidLeaseNotAPanic: a lease
// below redisync.MinLease is configuration, refused with ErrInvalidLease by
// every method; beside WithNodeTimeout it is the same error, not a panic
// naming the MinLease it stands in for. A node timeout not below a usable
// lease still panics.
func TestARefusedLeaseWithANodeTimeoutIsErrInvalidLeaseNotAPanic(t *testing.T) {
	m := startMasters(t, 1)
	for _, d := range []time.Duration{0, -time.Second, 5 * time.Millisecond} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			var mu *Mutex
			require.NotPanics(t, func() {
				mu = New(m.clients, "nt", WithLease(d), WithNodeTimeout(20*time.Millisecond))
			})
			err := mu.Lock(context.Background())
			require.ErrorIs(t, err, redisync.ErrInvalidLease)
			assert.Contains(t, err.Error(), "lease "+d.String(), "the error names the lease given")
			assert.Zero(t, m.held(t, "nt"))
		})
	}
	assert.Panics(t, func() { New(m.clients, "nt", WithLease(20*time.Millisecond), WithNodeTimeout(20*time.Millisecond)) })
	assert.Panics(t, func() { New(m.clients, "nt", WithLease(time.Millisecond), WithNodeTimeout(time.Microsecond)) })
}

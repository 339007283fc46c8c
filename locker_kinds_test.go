package redisync_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Issue 15: one hold surface. Permits, a read-write lock (as itself: its
// write side) and a lock combine in one multilock, nested in another, and
// Do runs under the lot.
func TestEveryKindIsALockerThatMultilockAndDoAccept(t *testing.T) {
	env := locktest.Setup(t)
	ctx := context.Background()
	pool := semaphore.New(env.C, "kinds:pool", 3)
	rw := rwlock.New(env.C, "kinds:rw")
	inner := multilock.New(pool.Locker(2), rw)
	outer := multilock.New(inner, rlock.New(env.C, "kinds:mu"))
	err := redisync.Do(ctx, outer, func(ctx context.Context) error {
		free, err := pool.Available(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, free, "the Locker's two permits are held")
		ok, err := rwlock.New(env.C, "kinds:rw").TryRLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "the RWMutex is write-locked")
		assert.NotZero(t, rw.Token())
		ok, err = rlock.New(env.C, "kinds:mu").TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok)
		return nil
	})
	require.NoError(t, err)
	free, err := pool.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, free)
	assert.Equal(t, []string{"kinds:pool"}, env.Keys(t), "only the semaphore's configuration is left")
}

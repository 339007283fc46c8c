package redlock

import (
	"context"
	"testing"

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

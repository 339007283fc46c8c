package redisync_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// Issue 12, defect 4: a panic inside Do's function still releases the lock,
// and the panic goes on up the caller's stack.
func TestDoReleasesTheLockWhenFnPanics(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	c := redisync.New(rc)
	defer c.Close()
	const name = "do:panic"
	mu := rlock.New(c, name)
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		_ = redisync.Do(context.Background(), mu, func(context.Context) error { panic("boom") })
	}()
	assert.Equal(t, "boom", recovered, "the panic reaches the caller")
	n, err := redistest.Do(t, rc, "EXISTS", name).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "the lock was released")
	assert.ErrorIs(t, mu.Err(), redisync.ErrNotHeld)
}

//go:build !redisync_noembed

package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/rlock"
)

// The embedded server runs the library's read-only scripts too: they go as
// EVALSHA_RO and EVAL_RO, whose shebang line the hook must comment out as
// it does for EVAL (miniredis's Lua does not read it).
func TestEmbeddedServerRunsTheReadOnlyScripts(t *testing.T) {
	rc, _, closeFn, err := connectEmbedded()
	require.NoError(t, err)
	defer closeFn()
	c := redisync.New(rc)
	defer c.Close()
	ctx := context.Background()
	m := rlock.New(c, "embedded:ro")
	require.NoError(t, m.Lock(ctx))
	locked, err := rlock.New(c, "embedded:ro").IsLocked(ctx)
	require.NoError(t, err)
	require.True(t, locked)
	require.NoError(t, m.Unlock(ctx))
	ok, err := latch.New(c, "embedded:latch").TrySetCount(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)
	n, err := latch.New(c, "embedded:latch").Count(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
}

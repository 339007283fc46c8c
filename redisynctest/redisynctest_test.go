package redisynctest_test

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// answers reports whether something accepts connections at addr.
func answers(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

func TestStartServesClientsAndStopsWhenTheTestEnds(t *testing.T) {
	var addr string
	t.Run("user test", func(t *testing.T) {
		srv := redisynctest.Start(t)
		addr = srv.Addr()
		a, b := srv.Client(t), srv.Client(t)
		ctx := context.Background()
		mu := rlock.New(a, "kit:lock")
		require.NoError(t, mu.Lock(ctx))
		ok, err := rlock.New(b, "kit:lock").TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "a second Client got a held lock")
		rc := srv.RueidisClient(t)
		n, err := rc.Do(ctx, rc.B().Exists().Key("kit:lock").Build()).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "the lock's key is not on the server")
		require.NoError(t, mu.Unlock(ctx))
	})
	assert.False(t, answers(addr), "server still running after its test ended")
}

func TestCloseStopsTheServerAndRemovesItsFiles(t *testing.T) {
	srv, err := redisynctest.StartServer()
	require.NoError(t, err)
	rc := srv.RueidisClient(t)
	dir, err := rc.Do(context.Background(), rc.B().ConfigGet().Parameter("dir").Build()).AsStrMap()
	require.NoError(t, err)
	require.DirExists(t, dir["dir"])

	srv.Close()
	srv.Close() // idempotent
	assert.False(t, answers(srv.Addr()), "server still running after Close")
	_, err = os.Stat(dir["dir"])
	assert.True(t, errors.Is(err, os.ErrNotExist), "directory left behind: %v", err)
}

func TestStartServerWithoutRedisOnPathSaysHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	srv, err := redisynctest.StartServer()
	require.Error(t, err)
	assert.Nil(t, srv)
	assert.Contains(t, err.Error(), "redis-server not found on PATH")
	assert.Contains(t, err.Error(), "apt-get install")
}

// Options given to Client reach the redisync Client.
func TestClientPassesOptions(t *testing.T) {
	srv := redisynctest.Start(t)
	c := srv.Client(t, redisync.WithWatchdogTimeout(3*time.Second))
	mu := rlock.New(c, "kit:opts")
	ctx := context.Background()
	require.NoError(t, mu.Lock(ctx))
	defer func() { require.NoError(t, mu.Unlock(ctx)) }()
	ttl, err := mu.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, time.Duration(0))
	assert.LessOrEqual(t, ttl, 3*time.Second, "lease is not the Client's watchdog timeout")
}

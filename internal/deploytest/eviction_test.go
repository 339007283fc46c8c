package deploytest

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// logBuffer collects a logger's output; safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// usedMemory is the server's used_memory in bytes.
func usedMemory(t *testing.T, rc rueidis.Client) int64 {
	t.Helper()
	info, err := redistest.Do(t, rc, "INFO", "memory").ToString()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no used_memory in INFO memory")
	return 0
}

// TestEvictionWarnsAndTheHolderIsToldOfAnEvictedLock: on a server with
// maxmemory and volatile-lru, the first acquisition warns (log at Warn, an
// EventEvictionPolicy naming node and policy) and goes on; then memory
// pressure makes Redis evict the lock's key — every lock key has an
// expiry, so volatile-* takes them first — and the holder is told at its
// next renewal: Done closes, Err matches ErrLockLost.
func TestEvictionWarnsAndTheHolderIsToldOfAnEvictedLock(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	redistest.Do(t, rc, "CONFIG", "SET", "maxmemory-policy", "volatile-lru")
	redistest.Do(t, rc, "CONFIG", "SET", "maxmemory", strconv.FormatInt(usedMemory(t, rc)+4<<20, 10))
	var logs logBuffer
	rec := &locktest.Recorder{}
	// Renewals every 500 ms: the loss is seen within a renewal or two.
	c := redisync.New(rc, redisync.WithLogger(logs.logger()), redisync.WithObserver(rec),
		redisync.WithWatchdogTimeout(1500*time.Millisecond))
	defer c.Close()
	bg := context.Background()

	m := rlock.New(c, "evict:held")
	require.NoError(t, m.Lock(bg), "EvictionWarn lets the acquisition through")
	assert.Contains(t, logs.String(), "level=WARN")
	assert.Contains(t, logs.String(), "may evict lock keys")
	assert.Contains(t, logs.String(), "policy=volatile-lru")
	require.Equal(t, 1, rec.Count(redisync.EventEvictionPolicy, "rlock", nil), "one event")
	var found *redisync.EvictionPolicyError
	for _, ev := range rec.Events() {
		if ev.Kind == redisync.EventEvictionPolicy {
			require.ErrorAs(t, ev.Err, &found)
			assert.Equal(t, "evict:held", ev.Name)
		}
	}
	assert.Equal(t, "volatile-lru", found.Policy)
	assert.Equal(t, srv.Addr(), found.Node)

	ok, err := rlock.New(c, "evict:other").TryLock(bg)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 1, rec.Count(redisync.EventEvictionPolicy, "rlock", nil), "once per node")

	// Data without expiry past maxmemory: Redis evicts volatile keys (only
	// the locks' here) at the next command, and stays over the limit.
	redistest.Do(t, rc, "DEBUG", "POPULATE", "80", "evict:fill", "100000")
	redistest.Do(t, rc, "PING")
	select {
	case <-m.Done():
	case <-time.After(10 * time.Second): // 20 renewal periods: generous under load
		t.Fatal("the holder of an evicted lock was not told")
	}
	assert.ErrorIs(t, m.Err(), redisync.ErrLockLost)
	info, err := redistest.Do(t, rc, "INFO", "stats").ToString()
	require.NoError(t, err)
	assert.NotContains(t, info, "evicted_keys:0\r", "Redis evicted keys")
	assert.Zero(t, existsN(t, rc, "evict:held"), "the lock's key was evicted")
}

func existsN(t *testing.T, rc rueidis.Client, key string) int64 {
	t.Helper()
	n, err := redistest.Do(t, rc, "EXISTS", key).AsInt64()
	require.NoError(t, err)
	return n
}

// TestEvictionRefuseRefusesToLockWithATypedError: with EvictionRefuse, every
// acquisition on a node that may evict fails with an *EvictionPolicyError
// (matching ErrEvictionPolicy) on one line naming the primitive and the
// name, and writes nothing; with noeviction, or maxmemory 0, nothing is
// refused or reported.
func TestEvictionRefuseRefusesToLockWithATypedError(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	redistest.Do(t, rc, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	redistest.Do(t, rc, "CONFIG", "SET", "maxmemory", "1gb")
	rec := &locktest.Recorder{}
	c := redisync.New(rc, redisync.WithEvictionCheck(redisync.EvictionRefuse), redisync.WithObserver(rec))
	defer c.Close()
	bg := context.Background()

	err := rlock.New(c, "strict:r").Lock(bg)
	var pe *redisync.EvictionPolicyError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, redisync.ErrEvictionPolicy)
	assert.Equal(t, "allkeys-lru", pe.Policy)
	assert.True(t, strings.HasPrefix(err.Error(), `rlock "strict:r": `), err.Error())
	assert.NotContains(t, err.Error(), "\n")
	_, err = rlock.New(c, "strict:r").TryLock(bg)
	assert.ErrorIs(t, err, redisync.ErrEvictionPolicy)
	_, _, err = semaphore.New(c, "strict:s", 1).TryAcquire(bg, 1)
	assert.ErrorIs(t, err, redisync.ErrEvictionPolicy)
	n, err := redistest.Do(t, rc, "DBSIZE").AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing written")
	assert.Equal(t, 1, rec.Count(redisync.EventEvictionPolicy, "rlock", nil))

	for _, cfg := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "0"}} {
		srv := redistest.Start(t)
		rc := srv.Client(t)
		redistest.Do(t, rc, "CONFIG", "SET", "maxmemory-policy", "volatile-ttl")
		redistest.Do(t, rc, "CONFIG", "SET", "maxmemory", "1gb")
		redistest.Do(t, rc, "CONFIG", "SET", cfg[0], cfg[1])
		rec := &locktest.Recorder{}
		c := redisync.New(rc, redisync.WithEvictionCheck(redisync.EvictionRefuse), redisync.WithObserver(rec))
		m := rlock.New(c, "strict:fine")
		require.NoError(t, m.Lock(bg), "%s %s", cfg[0], cfg[1])
		require.NoError(t, m.Unlock(bg))
		assert.Zero(t, rec.Count(redisync.EventEvictionPolicy, "rlock", nil), "%s %s", cfg[0], cfg[1])
		require.NoError(t, c.Close())
	}
}

// TestEvictionCheckDeniedByACLSaysSoOnceAndGoesOn: a user whose ACL denies
// CONFIG: the Client logs that once at Debug and locks as usual, also in
// EvictionRefuse mode (nothing is known).
func TestEvictionCheckDeniedByACLSaysSoOnceAndGoesOn(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	redistest.Do(t, admin, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	redistest.Do(t, admin, "CONFIG", "SET", "maxmemory", "1gb")
	redistest.Do(t, admin, "ACL", "SETUSER", "locker", "on", ">pw", "~*", "&*", "+@all", "-config")
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, Username: "locker", Password: "pw",
		DisableCache: true, ForceSingleClient: true})
	require.NoError(t, err)
	defer rc.Close()
	var logs logBuffer
	c := redisync.New(rc, redisync.WithEvictionCheck(redisync.EvictionRefuse), redisync.WithLogger(logs.logger()))
	defer c.Close()
	bg := context.Background()
	for i := range 3 {
		m := rlock.New(c, "acl:"+strconv.Itoa(i))
		require.NoError(t, m.Lock(bg))
		require.NoError(t, m.Unlock(bg))
	}
	assert.Equal(t, 1, strings.Count(logs.String(), "cannot read maxmemory-policy"), logs.String())
	assert.Contains(t, logs.String(), "level=DEBUG")
	assert.NotContains(t, logs.String(), "level=WARN")
}

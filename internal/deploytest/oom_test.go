package deploytest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// renewedLease is the watchdog lease of the holds the OOM test keeps across
// the memory pressure: renewed every 500 ms, a third of it, which kept
// healthy holds beside a second make test (the renewal tests use 1.5-2 s).
const renewedLease = 1500 * time.Millisecond

// keyspaceSnapshot is every key's DUMP and whether it has an expiry.
func keyspaceSnapshot(t *testing.T, rc rueidis.Client) map[string]string {
	t.Helper()
	keys, err := redistest.Do(t, rc, "KEYS", "*").AsStrSlice()
	require.NoError(t, err)
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		dump, err := redistest.Do(t, rc, "DUMP", k).ToString()
		require.NoError(t, err)
		if typ, _ := redistest.Do(t, rc, "TYPE", k).ToString(); typ == "zset" {
			// A zset's scores may be deadlines a renewal moves (a
			// semaphore's holders: beside a second make test one was
			// renewed between two snapshots): compare its members.
			members, err := redistest.Do(t, rc, "ZRANGE", k, "0", "-1").AsStrSlice()
			require.NoError(t, err)
			dump = "zset " + strings.Join(members, ",")
		}
		pttl, err := redistest.Do(t, rc, "PTTL", k).AsInt64()
		require.NoError(t, err)
		// A lease ticks down between the snapshots: compare whether a key
		// has an expiry, and its value, exactly.
		out[k] = dump + " expiry=" + strconv.FormatBool(pttl >= 0)
	}
	return out
}

// TestAcquiresUnderOOMFailWholeAndLeaveTheKeyspaceUnchanged: with used
// memory over maxmemory (noeviction), every acquire — rlock, fairlock,
// rwlock read and write, semaphore, latch TrySetCount — returns Redis's OOM
// error naming the primitive, and leaves every key exactly as it was (before
// issue 17 rwlock's RLock succeeded: its script's first write, a
// ZREMRANGEBYSCORE, is not refused for OOM, and the writes after it were
// then let through). Renewals and releases still run.
func TestAcquiresUnderOOMFailWholeAndLeaveTheKeyspaceUnchanged(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	c := redisync.New(rc)
	defer c.Close()
	bg := context.Background()
	// Some state of every kind under other names, taken before the
	// pressure (it must come through unchanged too).
	// Holds renewed every 500 ms (lease 1.5 s) must be renewed under OOM.
	rc2 := redisync.New(rc, redisync.WithWatchdogTimeout(renewedLease))
	defer rc2.Close()
	held := []redisync.Locker{rlock.New(rc2, "oom:held:r"), fairlock.New(rc2, "oom:held:f"),
		rwlock.New(rc2, "oom:held:rw").ReadLocker(), rwlock.New(rc2, "oom:held:w").WriteLocker()}
	for _, l := range held {
		require.NoError(t, l.Lock(bg))
	}
	nested := rlock.New(c, "oom:held:nested", rlock.WithReentrant())
	require.NoError(t, nested.Lock(bg))
	require.NoError(t, nested.Lock(bg))
	permit, err := semaphore.New(rc2, "oom:held:s", 2).Acquire(bg, 1)
	require.NoError(t, err)
	countdown := latch.New(c, "oom:held:l")
	_, err = countdown.TrySetCount(bg, 2)
	require.NoError(t, err)
	redistest.ExhaustMemory(t, rc)
	before := keyspaceSnapshot(t, rc)

	tries := []struct {
		kind string
		try  func() error
	}{
		{"rlock", func() error { _, err := rlock.New(c, "oom:r").TryLock(bg); return err }},
		{"fairlock", func() error { _, err := fairlock.New(c, "oom:f").TryLock(bg); return err }},
		{"rwlock", func() error { _, err := rwlock.New(c, "oom:rw").TryRLock(bg); return err }},
		{"rwlock", func() error { _, err := rwlock.New(c, "oom:rw").TryLock(bg); return err }},
		{"semaphore", func() error { _, _, err := semaphore.New(c, "oom:s", 2).TryAcquire(bg, 1); return err }},
		{"latch", func() error { _, err := latch.New(c, "oom:l").TrySetCount(bg, 3); return err }},
		{"ratelimit", func() error {
			_, err := ratelimit.New(c, "oom:rl", ratelimit.PerSecond(10), 5).Allow(bg, "k")
			return err
		}},
	}
	for i, tr := range tries {
		err := tr.try()
		require.Error(t, err, "%d %s: acquired past maxmemory", i, tr.kind)
		assert.Contains(t, err.Error(), "OOM", "%d %s", i, tr.kind)
		assert.True(t, strings.HasPrefix(err.Error(), tr.kind), "%d: %q names the primitive %s", i, err, tr.kind)
		assert.Equal(t, before, keyspaceSnapshot(t, rc), "%d %s: the keyspace changed", i, tr.kind)
	}

	// Renewals run under OOM (no shebang; a write of the key's own expiry
	// first): past a whole lease, every hold is still held.
	time.Sleep(renewedLease + 500*time.Millisecond)
	for _, l := range held {
		require.NoError(t, l.Err(), "renewed under OOM")
	}
	require.NoError(t, permit.Err(), "renewed under OOM")

	// Releases run under OOM (they carry no shebang; script.go): a release
	// that deletes frees memory, a nested one only decrements. A latch's
	// CountDown (DECR, its first write) is refused whole.
	for _, l := range held {
		require.NoError(t, l.Unlock(bg))
	}
	require.NoError(t, nested.Unlock(bg), "nested release")
	assert.True(t, exists(t, rc, "oom:held:nested"), "the outer hold stays")
	require.NoError(t, nested.Unlock(bg), "outer release")
	require.NoError(t, permit.Release(bg))
	err = countdown.CountDown(bg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "OOM")
	count, err := countdown.Count(bg)
	require.NoError(t, err, "counts are read-only scripts (no-writes): they run under OOM")
	assert.EqualValues(t, 2, count)
	for _, name := range []string{"oom:held:r", "oom:held:f", "oom:held:rw", "oom:held:w", "oom:held:nested"} {
		assert.False(t, exists(t, rc, name), "%s released", name)
	}
}

func exists(t *testing.T, rc rueidis.Client, key string) bool {
	t.Helper()
	n, err := redistest.Do(t, rc, "EXISTS", key).AsInt64()
	require.NoError(t, err)
	return n == 1
}

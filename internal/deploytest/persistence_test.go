package deploytest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// TestAOFKeepsAHoldAcrossAServerCrash: a single server with the append-only
// file (appendfsync always, and everysec) is killed (SIGKILL) while a lock
// is held and restarted from its AOF: the lock is still held — another
// Client cannot take it — and the holder's renewals carry on, with no loss
// reported. (A process crash: everysec keeps what was written, since
// Redis writes the AOF before it replies; only a machine crash can lose
// everysec's last second, which a test here cannot stage.) Without
// persistence the restart forgets the lock (rlock
// TestVanishedKeyIsSignalledWithinARenewalInterval: the holder is told).
func TestAOFKeepsAHoldAcrossAServerCrash(t *testing.T) {
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			t.Parallel() // own servers and names
			srv := redistest.StartArgs(t, "--appendonly", "yes", "--appendfsync", fsync)
			bg := context.Background()
			// A 2 s lease (renewed every 667 ms) rides out the restart; 2 s
			// kept healthy holds beside a second make test (renewal tests).
			const lease = 2 * time.Second
			holder := redisync.New(srv.Client(t), redisync.WithWatchdogTimeout(lease))
			defer holder.Close()
			m := rlock.New(holder, "aof:held")
			require.NoError(t, m.Lock(bg))
			token := m.Token()

			srv.Restart() // SIGKILL, then start again from the same directory

			other := redisync.New(srv.Client(t))
			defer other.Close()
			ok, err := rlock.New(other, "aof:held").TryLock(bg)
			require.NoError(t, err)
			assert.False(t, ok, "the hold survived the crash")
			// Past a whole lease after the restart: a hold whose renewals
			// failed would have been reported lost by now.
			time.Sleep(lease + 500*time.Millisecond)
			assert.NoError(t, m.Err(), "the holder keeps its hold")
			require.NoError(t, m.Unlock(bg))
			o := rlock.New(other, "aof:held")
			require.NoError(t, o.Lock(bg))
			assert.Greater(t, o.Token(), token)
			require.NoError(t, o.Unlock(bg))
		})
	}
}

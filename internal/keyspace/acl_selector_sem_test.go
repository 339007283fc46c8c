package keyspace

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/semaphore"
)

// TestSemAcquireUnderSelectorsThatSplitACommandsKeys: the semaphore's
// common acquire checks its writes against the ACL per command and key,
// but for the permit's HSET, the command of its first write
// (docs/guarantees.md, "Semaphore: ACL checks of the common acquire"). A
// Redis 7 selector that allows a command on some of the semaphore's keys
// and not on others: PEXPIRE or ZADD on one key only is refused with
// nothing written; HSET on the configuration only leaves the
// configuration written (its capacity and a last token, what any acquire
// writes) and nothing else, and the next acquire of another user is
// granted at once.
func TestSemAcquireUnderSelectorsThatSplitACommandsKeys(t *testing.T) {
	for _, c := range []struct {
		name, deny, selector string
		config               bool // the configuration is left written
	}{
		{"pexpire on the holders only", "-pexpire", "(+pexpire ~redisync_sem_holders:*)", false},
		{"pexpire on the permits only", "-pexpire", "(+pexpire ~redisync_sem_permits:*)", false},
		{"zadd on the queue only", "-zadd", "(+zadd ~redisync_sem_queue:*)", false},
		{"hset on the configuration only", "-hset", "(+hset ~aclsel:*)", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.do(t, "ACL", "SETUSER", "sem-split", "reset", "on", ">pw", "~*", "&*", "+@all", c.deny, c.selector)
			t.Cleanup(func() { e.do(t, "ACL", "DELUSER", "sem-split") })
			rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Username: "sem-split", Password: "pw",
				DisableCache: true, ForceSingleClient: true})
			require.NoError(t, err)
			defer rc.Close()
			cl := redisync.New(rc, redisync.WithHolderInfo(false))
			defer cl.Close()
			ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
			defer cancel()
			_, err = semaphore.New(cl, "aclsel:sem", 1, semaphore.WithLease(time.Minute)).Acquire(ctx, 1)
			require.Error(t, err, "a write is denied")
			left := e.snapshot(t)
			if c.config {
				require.Len(t, left, 1, "only the configuration: %s", e.describe(t))
				capacity, err := e.do(t, "HGET", "aclsel:sem", "capacity").ToString()
				require.NoError(t, err)
				assert.Equal(t, "1", capacity)
			} else {
				assert.Empty(t, left, "nothing written: %s", e.describe(t))
			}
			s := semaphore.New(e.c, "aclsel:sem", 1, semaphore.WithLease(time.Minute))
			p, ok, err := s.TryAcquire(ctx, 1)
			require.NoError(t, err)
			require.True(t, ok, "the one permit is free")
			require.NoError(t, p.Release(ctx))
		})
	}
}

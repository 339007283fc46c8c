package keyspace

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/semaphore"
)

// TestSemAcquireUnderSelectorsThatSplitACommandsKeys: the semaphore's
// common acquire checks one command against the ACL ahead, the DEL that
// undoes its writes, writes the holders zset and permits hash first and
// the configuration last, and deletes the two again when a write is
// denied (docs/guarantees.md, "Semaphore: ACL checks of the common
// acquire"). A Redis 7 selector that allows a command on some of the
// semaphore's keys and not on others, whichever write it stops (the
// permit's HSET, the ZADD, either PEXPIRE, the configuration's HSET) or
// the DEL it denies: the acquire is refused with NOPERM and nothing
// written, and the next acquire of another user is granted at once.
func TestSemAcquireUnderSelectorsThatSplitACommandsKeys(t *testing.T) {
	for _, c := range []struct {
		name, deny, selector string
	}{
		{"hset on the configuration only", "-hset", "(+hset ~aclsel:*)"},
		{"zadd on the queue only", "-zadd", "(+zadd ~redisync_sem_queue:*)"},
		{"pexpire on the permits only", "-pexpire", "(+pexpire ~redisync_sem_permits:*)"},
		{"pexpire on the holders only", "-pexpire", "(+pexpire ~redisync_sem_holders:*)"},
		{"hset on the permits only", "-hset", "(+hset ~redisync_sem_permits:*)"},
		{"del on the holders only", "-del", "(+del ~redisync_sem_holders:*)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			cl := e.userClient(t, "sem-split", []string{"~*", "&*", "+@all", c.deny, c.selector}, redisync.WithHolderInfo(false))
			ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
			defer cancel()
			_, err := semaphore.New(cl, "aclsel:sem", 1, semaphore.WithLease(time.Minute)).Acquire(ctx, 1)
			require.Error(t, err, "a write is denied")
			assert.Contains(t, err.Error(), "NOPERM")
			assert.Empty(t, e.snapshot(t), "nothing written: %s", e.describe(t))
			s := semaphore.New(e.c, "aclsel:sem", 1, semaphore.WithLease(time.Minute))
			p, ok, err := s.TryAcquire(ctx, 1)
			require.NoError(t, err)
			require.True(t, ok, "the one permit is free")
			require.NoError(t, p.Release(ctx))
		})
	}
}

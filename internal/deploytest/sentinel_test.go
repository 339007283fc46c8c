package deploytest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// One Sentinel deployment (a master, a replica, three Sentinels) serves
// both properties: WaitReplicas rolls back an acquisition the replica did
// not acknowledge, and a failover hands the lock on with higher tokens.
func TestSentinelDeployment(t *testing.T) {
	// Parallel: its own servers, names and Clients; its bounds are seconds
	// wide, so tests alongside do not change what it proves.
	t.Parallel()
	sn := redistest.StartSentinel(t, 3)
	bg := context.Background()
	replicaHas := func(key string) bool {
		n, err := redistest.Do(t, sn.Replica.Client(t), "EXISTS", key).AsInt64()
		require.NoError(t, err)
		return n == 1
	}
	masterHas := func(key string) bool {
		n, err := redistest.Do(t, sn.Master.Client(t), "EXISTS", key).AsInt64()
		require.NoError(t, err)
		return n == 1
	}

	t.Run("WaitReplicas rolls back when the replica is paused", func(t *testing.T) {
		c := redisync.New(sn.Client(t), redisync.WithWaitReplicas(1, 300*time.Millisecond))
		defer c.Close()
		m := rlock.New(c, "repl:lock")
		require.NoError(t, m.Lock(bg))
		assert.True(t, replicaHas("repl:lock"), "acknowledged: the replica has the lock")
		require.NoError(t, m.Unlock(bg))

		sn.Replica.Pause()
		start := time.Now()
		err := m.Lock(bg)
		sn.Replica.Resume()
		require.Error(t, err)
		assert.ErrorIs(t, err, redisync.ErrNotReplicated)
		assert.Less(t, time.Since(start), 3*time.Second)
		assert.Eventually(t, func() bool { return !masterHas("repl:lock") }, 5*time.Second, 10*time.Millisecond,
			"the unacknowledged grant was rolled back (the undo is a Client task)")
		assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld)
		require.Eventually(t, func() bool { return !replicaHas("repl:lock") }, 5*time.Second, 20*time.Millisecond)

		ok, err := m.TryLock(bg)
		require.NoError(t, err, "works again once the replica is back")
		assert.True(t, ok)
		require.NoError(t, m.Unlock(bg))
	})

	t.Run("failover hands the lock on with higher tokens", func(t *testing.T) {
		holderClient := redisync.New(sn.Client(t), redisync.WithWatchdogTimeout(time.Second))
		defer holderClient.Close()
		holder := rlock.New(holderClient, "failover:lock")
		require.NoError(t, holder.Lock(bg))
		before := holder.Token()
		require.Eventually(t, func() bool { return replicaHas("failover:lock") }, 5*time.Second, 10*time.Millisecond)

		sn.Failover()
		select {
		case <-holder.Done(): // renewals cannot reach the dead master in time
		case <-time.After(20 * time.Second):
			t.Fatal("the holder was not told it lost the lock")
		}
		waiterClient := redisync.New(sn.Client(t), redisync.WithMaxPoll(100*time.Millisecond))
		defer waiterClient.Close()
		waiter := rlock.New(waiterClient, "failover:lock")
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		require.NoError(t, waiter.Lock(ctx), "a waiter eventually acquires on the promoted replica")
		assert.Greater(t, waiter.Token(), before, "tokens after the failover exceed those before it")
		require.NoError(t, waiter.Unlock(bg))
		if err := holder.Unlock(bg); err != nil {
			assert.True(t, errors.Is(err, redisync.ErrLockLost) || errors.Is(err, redisync.ErrNotHeld), "%v", err)
		}
	})
}

// WithWaitReplicas with a timeout below MinDuration is a programmer error: New
// panics. (On a Cluster it is no longer refused: TestWaitReplicasOnACluster.)
func TestWaitReplicasRejectsBadArguments(t *testing.T) {
	assert.Panics(t, func() {
		redisync.New(redistest.Start(t).Client(t), redisync.WithWaitReplicas(1, 0))
	})
	assert.Panics(t, func() {
		redisync.New(redistest.Start(t).Client(t), redisync.WithWaitReplicas(-1, time.Second))
	})
}

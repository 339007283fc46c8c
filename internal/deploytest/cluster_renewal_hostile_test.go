package deploytest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// TestWaitReplicasRenewalsOf300HoldsAcrossAPausedReplicaAndAFailover: 300
// watchdog holds over many slots of a 3×1 Cluster with WaitReplicas(1);
// shard A's replica is paused past a lease while shard B's master is failed
// over (graceful CLUSTER FAILOVER) at the same time. Each hold is judged by
// its own shard: A's are lost (their renewals never acknowledged) and told;
// B's survive the failover (renewed on the new master, no loss); C's are
// untouched; nobody else can take a surviving hold's lock.
func TestWaitReplicasRenewalsOf300HoldsAcrossAPausedReplicaAndAFailover(t *testing.T) {
	t.Parallel() // its own servers; every bound is seconds wide
	cl := redistest.StartClusterWithReplicas(t, 3, 1)
	bg := context.Background()
	// A 5 s lease is renewed every 1.7 s: a failover and rueidis's slot
	// refresh (about a second) fit in it with room for a loaded machine.
	const n, lease = 300, 5 * time.Second
	c := redisync.New(cl.Client(t), redisync.WithWatchdogTimeout(lease),
		redisync.WithWaitReplicas(1, 500*time.Millisecond))
	defer c.Close()
	masters := cl.Masters()
	require.Len(t, masters, 3)
	shardOf := map[*redistest.Server]int{masters[0]: 0, masters[1]: 1, masters[2]: 2}
	holds := make([][]*rlock.Mutex, 3)
	for i := range n {
		m := rlock.New(c, fmt.Sprintf("c300:%d", i))
		require.NoError(t, lockAcknowledged(bg, m))
		s := shardOf[cl.MasterFor(m.Name())]
		holds[s] = append(holds[s], m)
	}
	for s := range holds {
		require.NotEmpty(t, holds[s], "shard %d", s)
	}
	pausedKey, failedKey := holds[0][0].Name(), holds[1][0].Name()

	replica, err := cl.PauseReplica(pausedKey)
	require.NoError(t, err)
	failed := make(chan error, 1)
	var promoted *redistest.Server
	go func() {
		var err error
		promoted, err = cl.Failover(failedKey, false)
		failed <- err
	}()
	time.Sleep(lease + 2*time.Second) // past a lease of unacknowledged renewals on A
	replica.Resume()
	select {
	case err := <-failed:
		require.NoError(t, err, "failover of shard B")
	case <-time.After(60 * time.Second):
		t.Fatal("failover of shard B did not finish")
	}
	require.NotNil(t, promoted)
	// One more lease with everything healthy: B's and C's holds keep on.
	time.Sleep(lease)

	for _, m := range holds[0] {
		assert.ErrorIs(t, m.Err(), redisync.ErrLockLost, "%s: on the paused replica's shard", m.Name())
	}
	other := redisync.New(cl.Client(t))
	defer other.Close()
	for s, group := range holds[1:] {
		for _, m := range group {
			require.NoError(t, m.Err(), "%s (shard %d): a hold must survive", m.Name(), s+1)
			ok, err := rlock.New(other, m.Name()).TryLock(bg)
			require.NoError(t, err)
			require.False(t, ok, "%s: another client got a held lock", m.Name())
		}
	}
	for _, m := range holds[1] {
		n, err := redistest.Do(t, promoted.Client(t), "EXISTS", m.Name()).AsInt64()
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "%s lives on the promoted master", m.Name())
	}
	for _, group := range holds[1:] {
		for _, m := range group {
			require.NoError(t, m.Unlock(bg))
		}
	}
}

// lockAcknowledged locks m, trying again while a grant is not acknowledged
// in time (ErrNotReplicated, which Lock returns at once; the grant was given
// back): on a loaded machine a replica just linked can take longer than the
// WAIT timeout, and the setup is not what the test is about.
func lockAcknowledged(ctx context.Context, m *rlock.Mutex) error {
	var err error
	for range 10 {
		if err = m.Lock(ctx); !errors.Is(err, redisync.ErrNotReplicated) {
			return err
		}
	}
	return err
}

package deploytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// WaitReplicas on a Cluster of 3 masters × 1 replica (issue 17): the WAIT
// is per shard. With the replica of the lock's slot paused an acquisition
// is rolled back and fails with ErrNotReplicated, while a lock on another
// shard is granted; with it running, a hold survives a forced failover (its
// renewals go to the new master, no loss is reported, nobody else gets in).
func TestWaitReplicasOnACluster(t *testing.T) {
	// Parallel: its own servers, names and Clients; every bound is seconds
	// wide.
	t.Parallel()
	cl := redistest.StartClusterWithReplicas(t, 3, 1)
	bg := context.Background()
	// has reads a master or a replica (READONLY first, on the same
	// connection: a DoMulti goes on one).
	has := func(s *redistest.Server, key string) bool {
		// nil: ReplicaOf found no replica (the Cluster failed a node over
		// on its own?) — a failure, not a panic that ends the package run.
		require.NotNil(t, s, "no such node in the Cluster's view")
		rc := s.Client(t)
		res := rc.DoMulti(bg, rc.B().Readonly().Build(), rc.B().Exists().Key(key).Build())
		n, err := res[1].AsInt64()
		require.NoError(t, err)
		return n == 1
	}

	t.Run("rolls back when the slot's replica is paused", func(t *testing.T) {
		const name = "crepl:lock"
		c := redisync.New(cl.Client(t), redisync.WithWaitReplicas(1, 300*time.Millisecond))
		defer c.Close()
		m := rlock.New(c, name)
		require.NoError(t, m.Lock(bg))
		assert.True(t, has(cl.ReplicaOf(cl.MasterFor(name)), name), "acknowledged: the replica has the lock")
		require.NoError(t, m.Unlock(bg))
		other := nameOnAnotherShard(t, cl, name)

		master := cl.MasterFor(name)
		replica, err := cl.PauseReplica(name)
		require.NoError(t, err)
		err = m.Lock(bg)
		o := rlock.New(c, other)
		otherErr := o.Lock(bg) // another shard's replica runs: granted
		replica.Resume()
		require.Error(t, err)
		assert.ErrorIs(t, err, redisync.ErrNotReplicated)
		assert.Eventually(t, func() bool { return !has(master, name) }, 5*time.Second, 10*time.Millisecond,
			"the unacknowledged grant was rolled back on the master (the undo is a Client task)")
		assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld)
		require.NoError(t, otherErr, "the WAIT is per shard: the other shard's replica acknowledged")
		require.NoError(t, o.Unlock(bg))
		require.Eventually(t, func() bool { return !has(replica, name) }, 10*time.Second, 20*time.Millisecond)

		ok, err := m.TryLock(bg)
		require.NoError(t, err, "works again once the replica is back")
		assert.True(t, ok)
		require.NoError(t, m.Unlock(bg))
	})

	t.Run("a renewal round over many slots waits per slot", func(t *testing.T) {
		// More slots than a renewal round has parts (MaxRenewParts, 128),
		// so parts span slots and the WAIT goes per slot within a part.
		// The lease is 3 s (renewed every second): a loaded machine stalls
		// a process for hundreds of ms, far from a lease.
		const n, lease = 200, 3 * time.Second
		c := redisync.New(cl.Client(t), redisync.WithWatchdogTimeout(lease),
			redisync.WithWaitReplicas(1, 500*time.Millisecond))
		defer c.Close()
		victim := cl.MasterFor("cmany:0")
		var onVictim, elsewhere []*rlock.Mutex
		for i := range n {
			m := rlock.New(c, fmt.Sprintf("cmany:%d", i))
			require.NoError(t, m.Lock(bg))
			if cl.MasterFor(m.Name()) == victim {
				onVictim = append(onVictim, m)
			} else {
				elsewhere = append(elsewhere, m)
			}
		}
		require.NotEmpty(t, onVictim)
		require.NotEmpty(t, elsewhere)
		replica, err := cl.PauseReplica("cmany:0")
		require.NoError(t, err)
		time.Sleep(lease + lease/2) // renewals on the victim's shard go unacknowledged past the lease
		replica.Resume()
		for _, m := range onVictim {
			assert.ErrorIs(t, m.Err(), redisync.ErrLockLost, "%s: renewals its replica never acknowledged", m.Name())
		}
		for _, m := range elsewhere {
			require.NoError(t, m.Err(), "%s: a hold on a healthy shard", m.Name())
			require.NoError(t, m.Unlock(bg))
		}
	})

	t.Run("the hold survives a forced failover", func(t *testing.T) {
		const name, lease = "cfailover:lock", 3 * time.Second
		c := redisync.New(cl.Client(t), redisync.WithWatchdogTimeout(lease),
			redisync.WithWaitReplicas(1, time.Second))
		defer c.Close()
		holder := rlock.New(c, name)
		require.NoError(t, holder.Lock(bg))
		token := holder.Token()
		old := cl.MasterFor(name)

		promoted, err := cl.Failover(name, true)
		require.NoError(t, err)
		require.NotEqual(t, old, promoted)
		// Two leases after the failover: without renewals reaching the
		// new master the key would have expired there.
		time.Sleep(2 * lease)
		require.NoError(t, holder.Err(), "no loss reported")
		select {
		case <-holder.Done():
			t.Fatal("the hold ended")
		default:
		}
		assert.True(t, has(promoted, name), "the new master keeps the lock (renewed there)")
		assert.Equal(t, token, holder.Token())

		other := redisync.New(cl.Client(t))
		defer other.Close()
		ok, err := rlock.New(other, name).TryLock(bg)
		require.NoError(t, err)
		assert.False(t, ok, "a second client cannot take it")
		require.NoError(t, holder.Unlock(bg))
		assert.False(t, has(promoted, name))
	})
}

// nameOnAnotherShard returns a name whose slot another master serves than
// name's.
func nameOnAnotherShard(t *testing.T, cl *redistest.Cluster, name string) string {
	t.Helper()
	for i := range 100 {
		o := fmt.Sprintf("%s:other:%d", name, i)
		if cl.MasterFor(o) != cl.MasterFor(name) {
			return o
		}
	}
	t.Fatal("no name on another shard")
	return ""
}

// A failover that loses an acknowledged grant (issue 17, the guarantee
// matrix's Cluster rows): the replica is cut off its master's stream while
// both run, a lock is granted on the master, and the master is killed.
// Without WaitReplicas the promoted replica never saw the grant, so a
// second client gets the lock while the first one's lease still runs —
// two holders, told apart only by the fencing token, which rises. With
// WaitReplicas(1) the same grant is refused (ErrNotReplicated) and rolled
// back: there is nothing for the failover to lose.
func TestClusterFailoverLosingAGrant(t *testing.T) {
	t.Parallel() // its own servers; every bound is seconds wide
	cl := redistest.StartClusterWithReplicas(t, 3, 1)
	bg := context.Background()
	const name = "closs:lock"

	// With WaitReplicas: refused while the replica is cut off.
	replica, heal, err := cl.CutReplica(name)
	require.NoError(t, err)
	waiting := redisync.New(cl.Client(t), redisync.WithWaitReplicas(1, 300*time.Millisecond))
	defer waiting.Close()
	err = rlock.New(waiting, name).Lock(bg)
	assert.ErrorIs(t, err, redisync.ErrNotReplicated, "a grant its replica did not get is refused")
	master := cl.MasterFor(name).Client(t)
	require.Eventually(t, func() bool { // the undo is a Client task
		n, err := redistest.Do(t, master, "EXISTS", name).AsInt64()
		return err == nil && n == 0
	}, 5*time.Second, 10*time.Millisecond, "and rolled back on the master")

	// Without: granted, then lost by the failover. The lease (20 s) outlasts
	// the failover by far, so the first hold is still running when the
	// second is granted.
	const lease = 20 * time.Second
	first := redisync.New(cl.Client(t), redisync.WithWatchdogTimeout(lease))
	defer first.Close()
	a := rlock.New(first, name)
	require.NoError(t, a.Lock(bg))
	granted := time.Now()
	killed, promoted, err := cl.KillMaster(name)
	require.NoError(t, err)
	require.Equal(t, replica, promoted)
	require.NoError(t, heal())

	second := redisync.New(cl.Client(t))
	defer second.Close()
	b := rlock.New(second, name)
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	require.NoError(t, b.Lock(ctx), "the promoted replica never saw the first grant")
	require.Less(t, time.Since(granted), lease, "granted again within the first hold's lease: two holders")
	assert.Greater(t, b.Token(), a.Token(), "the fence tells them apart")
	select {
	case <-a.Done(): // its next renewal finds the key gone
	case <-time.After(lease):
		t.Fatal("the first holder was never told")
	}
	assert.ErrorIs(t, a.Err(), redisync.ErrLockLost)
	require.NoError(t, b.Unlock(bg))
	require.NoError(t, cl.Rejoin(killed))
}

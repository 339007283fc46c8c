package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/scripts"
	"github.com/redisync/redisync/internal/watchdog"
)

// rueidis closes the connections of nodes a topology refresh dropped after
// 5 s, and schedules lazy refreshes after a random delay, from goroutines of
// its own that outlive a closed client by that long.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"))
}

// pausedMaster is a 3-master Cluster with holds in the lock layout on every
// master, the renewal script missing from every master's script cache (as
// before a Client's first renewal), and one master paused (SIGSTOP) until
// the test ends.
type pausedMaster struct {
	rc      rueidis.Client
	victim  *redistest.Server
	targets []*engine.RenewTarget
	onVic   []bool // onVic[i]: targets[i]'s key is on the paused master
}

func startPausedMaster(t *testing.T) *pausedMaster {
	const perMaster = 4
	cl := redistest.StartCluster(t, 3)
	p := &pausedMaster{rc: cl.Client(t), victim: cl.Nodes[0]}
	count := map[*redistest.Server]int{}
	for i := 0; len(p.targets) < 3*perMaster; i++ {
		key := fmt.Sprintf("renew:cluster:%d", i)
		node := cl.NodeFor(key)
		if count[node] == perMaster {
			continue
		}
		count[node]++
		redistest.Do(t, p.rc, "HSET", key, "owner", "1")
		redistest.Do(t, p.rc, "PEXPIRE", key, "60000")
		p.targets = append(p.targets, &engine.RenewTarget{Item: scripts.RenewItem{Key: key, Owner: "owner"}, LeaseMs: "60000"})
		p.onVic = append(p.onVic, node == p.victim)
	}
	for addr, nc := range p.rc.Nodes() {
		require.NoError(t, nc.Do(context.Background(), nc.B().ScriptFlush().Build()).Error(), "SCRIPT FLUSH on %s", addr)
	}
	t.Cleanup(p.victim.Resume)
	p.victim.Pause()
	return p
}

// TestRueidisClusterDoMultiWaitsForEveryNode shows the rueidis behaviour
// the renewer is built around: one DoMulti over the masters of a Cluster
// returns only when every node has answered or ctx has ended. The healthy
// masters answer at once, but their replies come back with the paused
// master's timeout.
func TestRueidisClusterDoMultiWaitsForEveryNode(t *testing.T) {
	p := startPausedMaster(t)
	const bound = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmds := make(rueidis.Commands, len(p.targets))
	for i, tg := range p.targets {
		cmds[i] = p.rc.B().Pttl().Key(tg.Item.Key).Build()
	}
	start := time.Now()
	res := p.rc.DoMulti(ctx, cmds...)
	took := time.Since(start)
	for i, r := range res {
		if p.onVic[i] {
			assert.ErrorIs(t, r.Error(), context.DeadlineExceeded, "command %d on the paused master", i)
		} else {
			assert.NoError(t, r.Error(), "command %d on a healthy master", i)
		}
	}
	assert.GreaterOrEqual(t, took, bound-10*time.Millisecond, "the healthy masters' replies wait for the paused one")
}

// TestRenewOnAnswersHealthyMastersWhileOneIsPaused (issue 12): a renewal
// round over a Cluster with one master paused, on masters that have not
// loaded the renewal script yet. Every hold on a healthy master is Alive;
// only the paused master's holds are Unknown. Before the fix the round was
// one DoMulti: the healthy masters' NOSCRIPT replies waited for the paused
// master until ctx ended, and the EVAL fallback then went out with the
// spent ctx, so every hold of the round came back Unknown (and was lost at
// its deadline under a paused master that outlived it).
func TestRenewOnAnswersHealthyMastersWhileOneIsPaused(t *testing.T) {
	p := startPausedMaster(t)
	e := engine.New(p.rc, engine.Config{WatchdogTimeout: time.Minute, MaxPoll: time.Second})
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res := engine.RenewOn(ctx, e, scripts.LockRenew, p.targets)
	require.Len(t, res, len(p.targets))
	for i, r := range res {
		if p.onVic[i] {
			assert.Equal(t, watchdog.Unknown, r.Status, "hold %d on the paused master", i)
		} else {
			assert.Equal(t, watchdog.Alive, r.Status, "hold %d on a healthy master: %v", i, r.Err)
		}
	}
}

// TestBatchRenewerReportsHealthyMastersBeforeThePausedOne (issue 12): the
// watchdog is handed the result of each hold on a healthy master as soon as
// its master answered, not when the paused master's commands time out — so
// a hold whose deadline comes before that timeout is confirmed in time.
// With the renew_round_wait mutant (internal/teeth/mutants: the round
// as one DoMulti, results at its end) the healthy holds come back at the
// bound, Unknown; so they do with renew_batch_err (one failed command
// fails the round).
func TestBatchRenewerReportsHealthyMastersBeforeThePausedOne(t *testing.T) {
	p := startPausedMaster(t)
	e := engine.New(p.rc, engine.Config{WatchdogTimeout: time.Minute, MaxPoll: time.Second})
	defer e.Close()
	// A generous bound and half of it for the healthy answers: the machine
	// may be loaded, and a healthy master answers in milliseconds.
	const bound = 2 * time.Second
	leases := make([]*watchdog.Lease, len(p.targets))
	for i, tg := range p.targets {
		leases[i] = &watchdog.Lease{TTL: time.Minute, Renewer: e.LockRenewer, Target: tg}
	}
	var mu sync.Mutex
	at := make([]time.Duration, len(leases))
	got := make([]watchdog.Result, len(leases))
	reports := 0
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	start := time.Now()
	e.LockRenewer.RenewParts(ctx, leases, func(idx []int, res []watchdog.Result) {
		mu.Lock()
		defer mu.Unlock()
		for j, i := range idx {
			at[i], got[i] = time.Since(start), res[j]
			reports++
		}
	})
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, len(leases), reports, "one report per lease")
	for i := range leases {
		if p.onVic[i] {
			assert.Equal(t, watchdog.Unknown, got[i].Status, "hold %d on the paused master", i)
			continue
		}
		assert.Equal(t, watchdog.Alive, got[i].Status, "hold %d on a healthy master: %v", i, got[i].Err)
		assert.Less(t, at[i], bound/2, "hold %d on a healthy master reported with the paused master's timeout", i)
	}
}

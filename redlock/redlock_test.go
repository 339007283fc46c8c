package redlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
)

func TestOneOrTwoFailedNodesOfFiveStillGrant(t *testing.T) {
	ms := startMasters(t, 5)
	var all [][]int
	for k := 1; k <= 2; k++ {
		all = append(all, subsets(5, k)...)
	}
	require.Len(t, all, 15)
	for _, mode := range []string{"paused", "killed"} {
		for _, failed := range all {
			t.Run(fmt.Sprintf("%s %v", mode, failed), func(t *testing.T) {
				// Fresh clients (no connection broken by an earlier subtest's
				// restart), and no quarantine: this is about failed nodes.
				// A quarter of the lease per node: the default (a twentieth,
				// 100 ms) let healthy nodes miss the round beside a second
				// make test (1 or 2 of 5 granted), where the process goes
				// unscheduled for 300 ms at times.
				m := New(ms.newClients(t), "five", WithLease(2*time.Second), WithNodeTimeout(500*time.Millisecond), WithRestartQuarantine(0))
				for _, i := range failed {
					if mode == "paused" {
						ms.srv[i].Pause()
					} else {
						ms.srv[i].Kill()
					}
				}
				ok, err := m.TryLock(bg())
				for _, i := range failed {
					if mode == "paused" {
						ms.srv[i].Resume()
					} else {
						ms.srv[i].Restart()
					}
				}
				require.NoError(t, err)
				require.True(t, ok, "a quorum of live nodes must grant (keys held: %d)", ms.held(t, "five"))
				require.NoError(t, m.Err())
				assert.GreaterOrEqual(t, ms.held(t, "five"), 3)
				require.NoError(t, m.Unlock(bg()))
				assert.Zero(t, ms.held(t, "five"))
			})
		}
	}
}

func TestThreeFailedNodesGiveQuorumErrorNeverSuccess(t *testing.T) {
	ms := startMasters(t, 5)
	// The lease outlasts the checks below, so that a key left behind
	// cannot pass them by expiring.
	m := New(ms.clients, "three-down", WithLease(10*time.Second))
	for _, i := range []int{0, 2, 4} {
		ms.srv[i].Pause()
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			for _, i := range []int{0, 2, 4} {
				ms.srv[i].Resume()
			}
		}
	}
	defer resume()
	ok, err := m.TryLock(bg())
	assert.False(t, ok)
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	assert.Equal(t, 2, qe.Granted)
	assert.Equal(t, 3, qe.Required)
	assert.Len(t, qe.Unwrap(), 3)

	ctx, cancel := context.WithTimeout(bg(), 400*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = m.Lock(ctx)
	elapsed := time.Since(start)
	require.ErrorAs(t, err, &qe)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, elapsed, 400*time.Millisecond+time.Second, "Lock outlived its ctx")
	assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld)
	resume()
	// The paused nodes' acquires were not abandoned: they run on resume,
	// and a Client task releases what they granted.
	locktest.Eventually(t, 3*time.Second, func() bool { return ms.held(t, "three-down") == 0 }, "the grants were released")
}

func TestClientPausedBeforeReadingRepliesFails(t *testing.T) {
	ms := startMasters(t, 5)
	// A lease long enough that a quorum answers within the node timeout
	// on a busy machine: the pause, not the load, must spend the validity.
	const lease = time.Second
	m := New(ms.clients, "paused-client", WithLease(lease), WithNodeTimeout(lease/2))
	m.PauseAfterReplies(lease + 50*time.Millisecond)
	ok, err := m.TryLock(bg())
	assert.False(t, ok, "a grant read after the lease ran out must not count")
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	assert.GreaterOrEqual(t, qe.Granted, 3, "a quorum granted, yet it must not count")
	assert.LessOrEqual(t, qe.Validity, time.Duration(0))
	assert.Zero(t, ms.held(t, "paused-client"))
	assert.Zero(t, m.Token())
}

func TestTokensRiseAcrossGrantsAndNodeRestarts(t *testing.T) {
	ms := startMasters(t, 5)
	var (
		mu     sync.Mutex
		tokens []uint64
		wg     sync.WaitGroup
		inside sync.Mutex
	)
	run := func(clients []*redisync.Client, grants int) {
		defer wg.Done()
		m := New(clients, "tokens", WithLease(time.Second), WithRetryDelay(time.Millisecond, 5*time.Millisecond), WithRestartQuarantine(time.Millisecond))
		for range grants {
			ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
			err := m.Lock(ctx)
			cancel()
			if err != nil {
				t.Error(err)
				return
			}
			if !inside.TryLock() {
				t.Error("two holders at once")
			} else {
				mu.Lock()
				tokens = append(tokens, m.Token())
				mu.Unlock()
				inside.Unlock()
			}
			if err := m.Unlock(bg()); err != nil {
				t.Error(err)
			}
		}
	}
	for range 3 {
		wg.Add(1)
		go run(ms.newClients(t), 60)
	}
	// Amnesic restarts in the middle: tokens must still rise.
	time.Sleep(200 * time.Millisecond)
	ms.srv[1].Restart()
	ms.srv[3].Restart()
	wg.Wait()
	t.Logf("%d grants", len(tokens))
	require.GreaterOrEqual(t, len(tokens), 180)
	for i := 1; i < len(tokens); i++ {
		require.Greater(t, tokens[i], tokens[i-1], "token %d", i)
	}
}

func TestRestartedNodeSitsOutUntilOldLeasesEnd(t *testing.T) {
	// A's first grant needs all three unpaused nodes to answer within the
	// node timeout. With an 800 ms lease the default is 100 ms, and beside
	// a second make test one node answered later than that (2 of 5
	// granted); a quarter of a 2 s lease leaves 500 ms per node and still
	// three quarters of the validity after waiting out the paused nodes.
	const lease = 2 * time.Second
	const nodeTimeout = lease / 4
	ms := startMasters(t, 5, redisync.WithWatchdogTimeout(lease))
	// A holds on nodes 0, 1, 2 only (3 and 4 paused while it acquires).
	ms.srv[3].Pause()
	ms.srv[4].Pause()
	a := New(ms.clients, "amnesia", WithNodeTimeout(nodeTimeout))
	ok, err := a.TryLock(bg())
	ms.srv[3].Resume()
	ms.srv[4].Resume()
	require.NoError(t, err)
	require.True(t, ok)

	// B has talked to every node before the restart (its attempt is busy).
	bClients := ms.newClients(t, redisync.WithWatchdogTimeout(lease))
	b := New(bClients, "amnesia", WithNodeTimeout(nodeTimeout))
	ok, err = b.TryLock(bg())
	require.NoError(t, err)
	require.False(t, ok)

	// Node 0 restarts without persistence: A's key there is gone.
	ms.srv[0].Restart()
	ms.reconnect(t, 0, "amnesia", bClients)
	// (The first command on a connection to the old process may fail with
	// EOF; the node's new run_id is then seen by the next attempt.)
	for range 5 {
		ok, err = b.TryLock(bg())
		if ok || !errors.Is(err, io.EOF) {
			break
		}
	}
	assert.False(t, ok, "the restarted node lent its vote to a second holder")
	var qe *QuorumError
	if err != nil {
		require.ErrorAs(t, err, &qe)
		assert.ErrorIs(t, err, ErrNodeRestarted)
	}
	// A can no longer confirm a quorum (2 of 5): it is told before its lease ends.
	select {
	case <-a.Done():
		assert.ErrorIs(t, a.Err(), redisync.ErrLockLost)
	case <-time.After(3 * lease):
		t.Fatal("holder not told it lost its quorum")
	}
	// Once the quarantine (the longest lease) has passed, B gets in.
	ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.Lock(ctx))
	require.NoError(t, b.Unlock(bg()))
	assert.True(t, errors.Is(a.Unlock(bg()), redisync.ErrLockLost))
}

func TestWatchdogKeepsARedlockAndReentryNests(t *testing.T) {
	// A lease that a busy machine's stalls do not eat: a renewal missed on
	// one node is retried well within it.
	const lease = time.Second
	ms := startMasters(t, 3, redisync.WithWatchdogTimeout(lease))
	m := New(ms.clients, "renewed", WithReentrant())
	require.NoError(t, m.Lock(bg()))
	tok := m.Token()
	require.NoError(t, m.Lock(bg()))
	assert.Equal(t, tok, m.Token())
	time.Sleep(5 * lease / 2) // renewed several times
	require.NoError(t, m.Err())
	// Every node of the hold keeps its key: all three, or a quorum when a
	// node answered phase 1 after its node timeout — a late node's grant
	// is undone and it is not part of the hold (beside a second make test
	// 2 of 3). Without renewals no node would hold the key any more.
	held := ms.held(t, "renewed")
	assert.GreaterOrEqual(t, held, 2, "a quorum of the three nodes")
	require.NoError(t, m.Unlock(bg()))
	assert.Equal(t, held, ms.held(t, "renewed"), "one hold left")
	require.NoError(t, m.Unlock(bg()))
	assert.Zero(t, ms.held(t, "renewed"))
	assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrNotHeld)
}

func TestBadInputPanics(t *testing.T) {
	ms := startMasters(t, 2)
	assert.PanicsWithValue(t, "redlock: no clients", func() { New(nil, "x") })
	assert.Panics(t, func() { New([]*redisync.Client{ms.clients[0], nil}, "x") })
	assert.Panics(t, func() { New([]*redisync.Client{ms.clients[0], ms.clients[0]}, "x") })
	assert.ErrorIs(t, New(ms.clients, "").Lock(bg()), redisync.ErrInvalidName)
	assert.ErrorIs(t, New(ms.clients, "x", WithLease(time.Millisecond)).Lock(bg()), redisync.ErrInvalidLease)
	assert.Panics(t, func() { New(ms.clients, "x", WithLease(time.Second), WithNodeTimeout(time.Second)) })
	assert.Panics(t, func() { New(ms.clients, "x", WithRetryDelay(2, 1)) })
}

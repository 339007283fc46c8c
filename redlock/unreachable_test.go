package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With two of five nodes unreachable (paused: the bytes are taken, no reply
// comes), every attempt and every release leaves replies owed by those two
// nodes for seconds. They are awaited in the background and must not hold
// up the handle: its next attempt goes out at once. A round's late replies
// can only touch that round's own key value, so there is nothing to wait
// for. (Before each round drew its own value, the handle's next operation
// waited for the late replies, up to engine.CompensateTimeout each: a
// handle that lost one race or unlocked sat out seconds, and a split brain
// saw almost no grants.)
func TestUnreachableNodesDoNotStallTheNextAttempt(t *testing.T) {
	ms := startMasters(t, 5)
	const (
		lease = 2 * time.Second
		// The healthy nodes must answer each step within it: 100 ms failed
		// an Unlock beside a second make test ("release confirmed by 0 of
		// 5 nodes", all three healthy local servers late, the process not
		// measurably stalled: the servers and the client's goroutines wait
		// for a CPU there, p99.9 over 200 ms). 400 ms leaves twice that.
		nodeTimeout = 400 * time.Millisecond
		cycles      = 6
		// A step waits at most one node timeout (the first round, before
		// the paused nodes count as stalled) and a few round trips. A
		// handle that waited for the late replies sat out
		// engine.CompensateTimeout (2 s) per step: the bound lies between.
		step = 1500 * time.Millisecond
	)
	opts := []Option{WithLease(lease), WithNodeTimeout(nodeTimeout), WithRetryDelay(5*time.Millisecond, 10*time.Millisecond)}
	m := New(ms.clients, "unreachable", opts...)
	other := New(ms.newClients(t), "unreachable", opts...)
	for _, i := range []int{3, 4} {
		ms.srv[i].Pause()
	}
	t.Cleanup(func() { // before the Clients close: their tasks await these nodes
		for _, i := range []int{3, 4} {
			ms.srv[i].Resume()
		}
	})

	timed := func(what string, f func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bg(), step)
		defer cancel()
		start := time.Now()
		require.NoError(t, f(ctx), "%s after %v", what, time.Since(start))
	}
	start := time.Now()
	for c := range cycles {
		// A failed attempt (the lock is taken elsewhere), then a won one.
		timed("other.Lock", other.Lock)
		timed("TryLock", func(ctx context.Context) error {
			ok, err := m.TryLock(ctx)
			if err == nil && ok {
				t.Fatalf("cycle %d: TryLock granted a lock held elsewhere", c)
			}
			return nil // busy, or a QuorumError: either way it did not grant
		})
		timed("other.Unlock", other.Unlock)
		timed("Lock", m.Lock)
		timed("Unlock", m.Unlock)
		timed("Lock again", m.Lock)
		timed("Unlock again", m.Unlock)
	}
	// 7 steps a cycle, most of them a few round trips: under 500 ms a step
	// on average is plenty on a busy machine, and a quarter of the 2 s a
	// step of a handle waiting for late replies takes.
	assert.Less(t, time.Since(start), time.Duration(cycles)*7*500*time.Millisecond, "the handles waited for late replies")
}

// A node that already owes a reply for longer than the node timeout (its
// server paused, or blackholed by a partition) is not waited for again:
// rounds and releases end when the other nodes have answered. Otherwise
// every round against a split view keeps its keys on the shared node for a
// whole node timeout, and the contenders of both halves starve each other
// (the torture's split-brain saw almost no grants).
func TestStalledNodesAreNotWaitedForAgain(t *testing.T) {
	ms := startMasters(t, 5)
	const (
		nodeTimeout = 500 * time.Millisecond
		cycles      = 8
	)
	m := New(ms.clients, "stalled", WithLease(5*time.Second), WithNodeTimeout(nodeTimeout))
	for _, i := range []int{3, 4} {
		ms.srv[i].Pause()
	}
	t.Cleanup(func() { // before the Clients close: their tasks await these nodes
		for _, i := range []int{3, 4} {
			ms.srv[i].Resume()
		}
	})
	// The first round waits the node timeout for the paused nodes.
	start := time.Now()
	require.NoError(t, m.Lock(bg()))
	assert.GreaterOrEqual(t, time.Since(start), nodeTimeout)
	require.NoError(t, m.Unlock(bg()))
	time.Sleep(nodeTimeout / 10) // the first acquires are overdue now

	// Waiting for them would take two node timeouts a cycle (the round and
	// the release): 8 s. Not waiting takes a few round trips.
	ctx, cancel := context.WithTimeout(bg(), 5*time.Second) // bounds a stalled handle
	defer cancel()
	start = time.Now()
	for range cycles {
		require.NoError(t, m.Lock(ctx))
		require.NoError(t, m.Err())
		require.NoError(t, m.Unlock(ctx))
	}
	assert.Less(t, time.Since(start), time.Duration(cycles)*nodeTimeout*3/4, "rounds waited for the stalled nodes")
}

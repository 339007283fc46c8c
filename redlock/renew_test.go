package redlock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/watchdog"
)

// TestRenewalReportsAHoldOnceAQuorumAnswered (issue 12): with one of three
// nodes paused, a hold's renewal is decided by the two that answer, and the
// watchdog is told then — not when the paused node's wait (four node
// timeouts) runs out. Before, the renewer waited for every node of the
// batch before reporting any hold, so a hold near its deadline in a batch
// with a stalled node was confirmed only at the end of that wait, or lost.
// With internal/teeth/mutants/renew_round_wait_redlock.mutant the
// report comes at the end again.
func TestRenewalReportsAHoldOnceAQuorumAnswered(t *testing.T) {
	ms := startMasters(t, 3)
	const nodeTimeout = 500 * time.Millisecond // the paused node is waited for 2 s
	m := New(ms.clients, "renew:quorum", WithLease(30*time.Second), WithNodeTimeout(nodeTimeout))
	require.NoError(t, m.Lock(bg()))
	t.Cleanup(func() { require.NoError(t, m.Unlock(bg())) })
	t.Cleanup(ms.srv[2].Resume) // before the Unlock above: it runs first
	ms.srv[2].Pause()

	lease := &watchdog.Lease{TTL: m.lease, Target: m.renewTarget()}
	var mu sync.Mutex
	var at time.Duration
	var got watchdog.Result
	reports := 0
	ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
	defer cancel()
	start := time.Now()
	renewerOf.RenewEach(ctx, []*watchdog.Lease{lease}, func(_ int, r watchdog.Result) {
		mu.Lock()
		defer mu.Unlock()
		at, got = time.Since(start), r
		reports++
	})
	returned := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, reports)
	assert.Equal(t, watchdog.Alive, got.Status, "two of three nodes renewed it: %v", got.Err)
	// The paused node holds RenewEach for about 4 node timeouts; the
	// answer of the two others needs milliseconds. Half the wait leaves a
	// loaded machine plenty.
	assert.GreaterOrEqual(t, returned, 3*nodeTimeout, "RenewEach waited for the paused node")
	assert.Less(t, at, 2*nodeTimeout, "reported when the quorum answered, not after the paused node's wait")
}

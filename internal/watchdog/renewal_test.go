package watchdog

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// perLease is a Renewer that answers each lease by its own entry in status
// (Alive when absent); a lease in hang makes the call wait for ctx, as a
// command to a paused shard does, while the other leases keep their answers.
type perLease struct {
	mu     sync.Mutex
	calls  int
	status map[*Lease]Status
	hang   map[*Lease]bool
}

func (p *perLease) Renew(ctx context.Context, leases []*Lease) []Result {
	p.mu.Lock()
	p.calls++
	res := make([]Result, len(leases))
	hang := false
	for i, l := range leases {
		res[i].Status = Alive
		if st, ok := p.status[l]; ok {
			res[i] = Result{Status: st, Err: errors.New("scripted")}
		}
		if p.hang[l] {
			hang = true
			res[i] = Result{Status: Unknown}
		}
	}
	p.mu.Unlock()
	if hang {
		<-ctx.Done()
		for i := range res {
			if res[i].Status == Unknown {
				res[i].Err = ctx.Err()
			}
		}
	}
	return res
}

// TestFailedRenewalsRetryAtThePaceNotInATightLoop: a renewal that keeps
// failing fast (connection refused while a server is down) is retried every
// TTL/10 (plus jitter) until the deadline. Before the fix the retry was due
// inside the TTL/6 batching window and the loop re-fired at once: thousands
// of calls (internal/teeth/mutants/renew_tight_loop.mutant brings
// that back).
func TestFailedRenewalsRetryAtThePaceNotInATightLoop(t *testing.T) {
	w := New(errors.New("closed"))
	defer w.Close()
	r := &scripted{err: errors.New("dial tcp: connection refused")}
	lost := make(chan error, 1)
	const ttl = time.Second
	require.NoError(t, w.Add(lease(r, ttl, lost), time.Now()))
	select {
	case err := <-lost:
		assert.ErrorIs(t, err, ErrLost)
	case <-time.After(5 * time.Second):
		t.Fatal("lease not reported lost")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// First attempt at TTL/3, then one every 100–125 ms until 990 ms: at
	// most 7 calls; 12 leaves room for a loaded machine, a tight loop makes
	// thousands.
	assert.LessOrEqual(t, r.calls, 12, "renewal attempts for one lease over one TTL")
	assert.GreaterOrEqual(t, r.calls, 3, "retried until the deadline")
}

// TestRetriesOfManyFailingBatchesConverge: leases taken at different moments
// fail in different batches; their retries merge so the Renewer (one node)
// sees about one call per retry interval, not one per batch.
func TestRetriesOfManyFailingBatchesConverge(t *testing.T) {
	w := New(errors.New("closed"))
	defer w.Close()
	r := &scripted{err: errors.New("connection refused")}
	const ttl, n = 2 * time.Second, 40
	lost := make(chan error, n)
	start := time.Now()
	for i := range n {
		// Spread over a whole renewal interval: several first batches.
		require.NoError(t, w.Add(lease(r, ttl, lost), start.Add(-time.Duration(i)*ttl/3/n)))
	}
	for range n {
		select {
		case <-lost:
		case <-time.After(5 * time.Second):
			t.Fatal("leases not reported lost")
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// The leases live < 2 s after the start, retries every 200–250 ms: about
	// 8 rounds once merged, plus the first batches (at most 3 with a TTL/6
	// window over TTL/3). Without convergence each first batch would retry on
	// its own; a tight loop makes thousands.
	assert.LessOrEqual(t, r.calls, 16, "batch sizes %v", r.sizes)
}

// TestEachLeaseIsJudgedByItsOwnResult: in one batch a Gone lease is lost at
// once, an Unknown one is retried and lost at its deadline, and the Alive
// ones stay renewed throughout.
func TestEachLeaseIsJudgedByItsOwnResult(t *testing.T) {
	w := New(errors.New("closed"))
	defer w.Close()
	const ttl = 600 * time.Millisecond
	r := &perLease{status: map[*Lease]Status{}}
	healthyLost := make(chan error, 10)
	goneLost, unknownLost := make(chan error, 1), make(chan error, 1)
	start := time.Now()
	gone, unknown := lease(r, ttl, goneLost), lease(r, ttl, unknownLost)
	r.status[gone], r.status[unknown] = Gone, Unknown
	require.NoError(t, w.Add(gone, start))
	require.NoError(t, w.Add(unknown, start))
	for range 10 {
		require.NoError(t, w.Add(lease(r, ttl, healthyLost), start))
	}
	select {
	case <-goneLost:
		assert.Less(t, time.Since(start), ttl/2, "gone: lost at the first renewal")
	case <-time.After(3 * time.Second):
		t.Fatal("gone lease not reported")
	}
	select {
	case <-unknownLost:
		assert.GreaterOrEqual(t, time.Since(start), ttl-Drift(ttl)-5*time.Millisecond, "unknown: lost at its deadline, not before")
	case <-time.After(3 * time.Second):
		t.Fatal("unknown lease not reported")
	}
	time.Sleep(2 * ttl)
	assert.Empty(t, healthyLost, "a neighbour's result cost a healthy lease")
	assert.Equal(t, 10, w.Len())
}

// TestHungCommandDoesNotCostTheOtherLeases: one lease's command hangs (a
// paused shard); the renewal waits at most TTL/3 for it, so the other
// leases of the batch are confirmed well before their deadlines and never
// lost, while the hung one is lost at its deadline.
func TestHungCommandDoesNotCostTheOtherLeases(t *testing.T) {
	w := New(errors.New("closed"))
	defer w.Close()
	const ttl = 600 * time.Millisecond
	r := &perLease{hang: map[*Lease]bool{}}
	healthyLost, hungLost := make(chan error, 5), make(chan error, 1)
	start := time.Now()
	hung := lease(r, ttl, hungLost)
	r.hang[hung] = true
	require.NoError(t, w.Add(hung, start))
	for range 5 {
		require.NoError(t, w.Add(lease(r, ttl, healthyLost), start))
	}
	select {
	case <-hungLost:
		// Decided at TTL − drift; the slack is for a loaded machine.
		assert.Less(t, time.Since(start), ttl+100*time.Millisecond, "hung lease lost at its deadline")
	case <-time.After(3 * time.Second):
		t.Fatal("hung lease not reported")
	}
	time.Sleep(3 * ttl)
	assert.Empty(t, healthyLost, "a hung neighbour cost a healthy lease")
	assert.Equal(t, 5, w.Len())
}

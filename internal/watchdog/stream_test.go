package watchdog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// streaming is a StreamRenewer that reports every lease not in hang as
// Alive at once and leaves the hung ones to ctx, as the engine's renewer
// does when one Cluster master is paused.
type streaming struct{ perLease }

func (s *streaming) RenewEach(ctx context.Context, leases []*Lease, report func(int, Result)) {
	s.mu.Lock()
	s.calls++
	var hung []int
	for i, l := range leases {
		if s.hang[l] {
			hung = append(hung, i)
			continue
		}
		report(i, Result{Status: Alive})
	}
	s.mu.Unlock()
	if len(hung) > 0 {
		<-ctx.Done()
		for _, i := range hung {
			report(i, Result{Status: Unknown, Err: ctx.Err()})
		}
	}
}

// TestStreamedResultIsSettledBeforeTheBatchEnds (issue 12): a lease close
// to its deadline shares a batch with a lease whose command hangs (a paused
// Cluster master). Its result, reported at once, is applied at once: it is
// confirmed and stays renewed, while the hung lease is lost at its own
// deadline. Before the fix results were applied when the whole batch
// returned — at the earliest deadline in it, the near lease's — and the near
// lease was lost for want of an answer that had arrived at once.
func TestStreamedResultIsSettledBeforeTheBatchEnds(t *testing.T) {
	w := New(errors.New("closed"))
	defer w.Close()
	// A long lease, so that the near lease still has 500 ms when the batch
	// goes out: room for a loaded machine.
	const ttl = 3 * time.Second
	r := &streaming{perLease{hang: map[*Lease]bool{}}}
	nearLost, hungLost := make(chan error, 1), make(chan error, 1)
	start := time.Now()
	near := lease(r, ttl, nearLost)
	hung := lease(r, ttl, hungLost)
	r.hang[hung] = true
	// near: deadline 500 ms from now, overdue; hung: due within the TTL/6
	// window, so both go in the first batch.
	require.NoError(t, w.Add(near, start.Add(-(ttl-Drift(ttl)-500*time.Millisecond))))
	require.NoError(t, w.Add(hung, start.Add(-700*time.Millisecond)))
	// Its answer is in at once: well before its old deadline (and the hung
	// command's timeout) it is confirmed anew.
	time.Sleep(250 * time.Millisecond)
	w.mu.Lock()
	deadline := near.deadline
	w.mu.Unlock()
	assert.Greater(t, deadline, monoNs(start.Add(time.Second)), "near lease confirmed 250 ms into a batch whose other command hangs")
	select {
	case <-hungLost:
	case err := <-nearLost:
		t.Fatalf("the near lease was lost (%v) %v after the start: its result waited for the hung command", err, time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatal("hung lease not reported lost")
	}
	select {
	case err := <-nearLost:
		t.Fatalf("the near lease was lost: %v", err)
	case <-time.After(ttl / 3):
	}
	assert.Equal(t, 1, w.Len(), "the near lease is still registered")
}

// TestUnreportedLeaseCountsAsUnknown: a StreamRenewer that returns without
// reporting a lease leaves it Unknown (retried, lost at its deadline), not
// in flight forever.
func TestUnreportedLeaseCountsAsUnknown(t *testing.T) {
	w := New(errors.New("closed"))
	defer w.Close()
	const ttl = 300 * time.Millisecond
	r := &silent{}
	lost := make(chan error, 1)
	start := time.Now()
	require.NoError(t, w.Add(lease(r, ttl, lost), start))
	select {
	case err := <-lost:
		assert.ErrorIs(t, err, ErrLost)
	case <-time.After(5 * time.Second):
		t.Fatal("unreported lease not lost at its deadline")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.GreaterOrEqual(t, r.calls, 2, "retried after a renewal that reported nothing")
}

// silent reports nothing.
type silent struct{ perLease }

func (s *silent) RenewEach(context.Context, []*Lease, func(int, Result)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
}

package watchdog

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scripted is a Renewer whose answers the test sets; it counts calls.
type scripted struct {
	mu    sync.Mutex
	calls int
	sizes []int
	err   error
	gone  map[*Lease]bool
	block chan struct{} // non-nil: Renew waits on it or ctx
}

func (s *scripted) Renew(ctx context.Context, leases []*Lease) []Result {
	s.mu.Lock()
	s.calls++
	s.sizes = append(s.sizes, len(leases))
	err, block := s.err, s.block
	res := make([]Result, len(leases))
	for i, l := range leases {
		res[i].Status = Alive
		if s.gone[l] {
			res[i].Status = Gone
		}
	}
	s.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return Unknowns(len(leases), ctx.Err())
		}
	}
	if err != nil {
		return Unknowns(len(leases), err)
	}
	return res
}

func lease(r Renewer, ttl time.Duration, lost chan<- error) *Lease {
	return &Lease{TTL: ttl, Renewer: r, OnLost: func(err error) { lost <- err }}
}

func TestManyLeasesAreRenewedInFewBatches(t *testing.T) {
	w := New(errors.New("closed"))
	defer w.Close()
	r := &scripted{}
	lost := make(chan error, 100)
	now := time.Now()
	for i := range 100 {
		// Acquired over 60 ms: still batched together.
		require.NoError(t, w.Add(lease(r, 300*time.Millisecond, lost), now.Add(time.Duration(i)*600*time.Microsecond)))
	}
	time.Sleep(time.Second)
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Empty(t, lost)
	assert.LessOrEqual(t, r.calls, 12, "batches: %v", r.sizes) // ~10 intervals of 100 ms
	assert.GreaterOrEqual(t, r.calls, 5)
}

func TestGoneLeaseIsLostAtOnce(t *testing.T) {
	w := New(errors.New("closed"))
	defer w.Close()
	lost := make(chan error, 1)
	r := &scripted{gone: map[*Lease]bool{}}
	l := lease(r, 3*time.Second, lost)
	r.gone[l] = true
	require.NoError(t, w.Add(l, time.Now()))
	select {
	case err := <-lost:
		assert.ErrorIs(t, err, ErrLost)
	case <-time.After(2 * time.Second): // first renewal at 1 s
		t.Fatal("not reported")
	}
	assert.False(t, w.Remove(l))
}

func TestUnconfirmedLeaseIsLostBeforeItsTTL(t *testing.T) {
	w := New(errors.New("closed"))
	defer w.Close()
	lost := make(chan error, 1)
	r := &scripted{block: make(chan struct{})} // the server never answers
	defer close(r.block)
	start := time.Now()
	require.NoError(t, w.Add(lease(r, 300*time.Millisecond, lost), start))
	select {
	case err := <-lost:
		assert.ErrorIs(t, err, ErrLost)
		// The engine decides at TTL − drift (295 ms); on a loaded machine the
		// report itself can come a few milliseconds later.
		assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond-Drift(300*time.Millisecond))
		assert.Less(t, time.Since(start), 300*time.Millisecond+50*time.Millisecond)
	case <-time.After(time.Second):
		t.Fatal("not reported")
	}
}

func TestTransientErrorsAreRetriedUntilTheDeadline(t *testing.T) {
	w := New(errors.New("closed"))
	defer w.Close()
	lost := make(chan error, 1)
	r := &scripted{err: errors.New("connection reset")}
	require.NoError(t, w.Add(lease(r, 300*time.Millisecond, lost), time.Now()))
	<-lost
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.GreaterOrEqual(t, r.calls, 3, "retried every TTL/10 after the first failure")
}

func TestRemovedLeaseIsNeverReported(t *testing.T) {
	w := New(errors.New("closed"))
	var reported atomic.Int32
	l := &Lease{TTL: 30 * time.Millisecond, Fixed: true, OnLost: func(error) { reported.Add(1) }}
	require.NoError(t, w.Add(l, time.Now()))
	assert.True(t, w.Remove(l))
	time.Sleep(60 * time.Millisecond)
	w.Close()
	assert.Zero(t, reported.Load())
}

func TestCloseReportsEveryLeaseWithTheCloseError(t *testing.T) {
	closeErr := errors.New("closed")
	w := New(closeErr)
	lost := make(chan error, 2)
	require.NoError(t, w.Add(lease(&scripted{}, time.Minute, lost), time.Now()))
	require.NoError(t, w.Add(&Lease{TTL: time.Minute, Fixed: true, OnLost: func(err error) { lost <- err }}, time.Now()))
	w.Close()
	assert.ErrorIs(t, <-lost, closeErr)
	assert.ErrorIs(t, <-lost, closeErr)
	assert.ErrorIs(t, w.Add(lease(&scripted{}, time.Minute, lost), time.Now()), ErrClosed)
}

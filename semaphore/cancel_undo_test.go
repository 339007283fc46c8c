package semaphore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 22, defect 13 (after x/sync/semaphore's test of a cancelled
// Acquire, in our own words): an Acquire that fails leaves the semaphore as
// it was. The cancel comes as the holder's release wakes the waiter, so its
// attempt is in flight and may be granted; the Acquire must give that grant
// back (and leave the queue) before it returns context.Canceled, so a
// TryAcquire of the whole capacity right after it succeeds. Before, a
// Client task gave the grant back after Acquire had returned, and the
// TryAcquire failed in most rounds.
func TestCancelledAcquireLeavesTheSemaphoreAsItWas(t *testing.T) {
	e := setup(t)
	const rounds = 20
	cancelled := 0
	for round := range rounds {
		s := New(e.C, "sem:cancel-undo", 2)
		held, err := s.Acquire(bg(), 1)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(bg())
		got := make(chan error, 1)
		go func() {
			p, err := s.Acquire(ctx, 2)
			if err == nil {
				err = p.Release(bg())
				if err == nil {
					err = errGranted
				}
			}
			got <- err
		}()
		eventually(t, 5*time.Second, func() bool { n, err := s.Waiting(bg()); return err == nil && n == 1 }, "the Acquire never queued")
		require.NoError(t, held.Release(bg())) // wakes the waiter: its attempt goes out
		if round%2 == 1 {
			time.Sleep(time.Duration(round%5) * 100 * time.Microsecond)
		}
		cancel()
		err = <-got
		if errors.Is(err, errGranted) {
			continue // granted before the cancel: nothing to check
		}
		require.ErrorIs(t, err, context.Canceled)
		cancelled++
		p, ok, err := s.TryAcquire(bg(), 2)
		require.NoError(t, err)
		require.True(t, ok, "round %d: the cancelled Acquire left the semaphore changed", round)
		require.NoError(t, p.Release(bg()))
	}
	require.Greater(t, cancelled, rounds/4, "too few rounds were cancelled to say anything")
}

var errGranted = errors.New("granted")

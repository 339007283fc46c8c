package rlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 22, defect 13 (after rueidislock's test of cancelled lockers, in
// our own words): fifty waiters whose shared ctx is cancelled as the holder
// releases — so their attempts are in flight, and one may be granted —
// leave the lock free by the time the last of them has returned (those
// that got it before the cancel unlock). Before, a Client task gave a
// cancelled waiter's grant back after its Lock had returned, and IsLocked
// right after could still say true.
func TestCancelledWaitersLeaveTheLockFreeWhenTheyReturn(t *testing.T) {
	e := setup(t)
	const name, waiters, rounds = "mutex:cancel-undo", 50, 4
	clients := []*Mutex{}
	for range waiters {
		clients = append(clients, New(e.Client(t), name))
	}
	for round := range rounds {
		holder := New(e.C, name)
		require.NoError(t, holder.Lock(bg()))
		ctx, cancel := context.WithCancel(bg())
		var wg sync.WaitGroup
		errc := make(chan error, waiters)
		for _, m := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := m.Lock(ctx)
				if err == nil {
					err = m.Unlock(bg())
				}
				if err != nil && !errors.Is(err, context.Canceled) {
					errc <- err
				}
			}()
		}
		e.WaitSubscribed(t, holder.keys.Channel)
		time.Sleep(100 * time.Millisecond) // the waiters are past their first attempt
		require.NoError(t, holder.Unlock(bg()))
		cancel()
		wg.Wait()
		close(errc)
		for err := range errc {
			require.NoError(t, err)
		}
		locked, err := holder.IsLocked(bg())
		require.NoError(t, err)
		require.False(t, locked, "round %d: the lock is held after every waiter returned", round)
	}
}

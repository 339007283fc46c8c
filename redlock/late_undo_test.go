package redlock

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Lock whose ctx ends while its only node is stopped for longer than one
// send of an acquire and one of its release (engine.CompensateTimeout
// each) leaves no grant once the node is back. The acquire timed out on a
// connection that was then dropped, so the node runs it when it resumes,
// beside the release its undo sent on a new connection, in either order;
// other waiters of other names load the node as it resumes, which makes
// the release the first more often. The undo sends the release until it is
// answered and once more after that: the grant is gone within a round trip
// of the resume, not left for its lease (30 s).
func TestLockCancelledInALongNodeStallLeavesNoGrantWhenTheNodeReturns(t *testing.T) {
	m := startMasters(t, 1)
	srv := m.srv[0]
	const busy = 6
	holder := m.newClients(t)
	var calls []func(context.Context) error
	for i := range busy {
		n := fmt.Sprintf("redlock:long-stall:busy%d", i)
		h := New(holder, n)
		require.NoError(t, h.Lock(bg()))
		t.Cleanup(func() { _ = h.Unlock(bg()) })
		calls = append(calls, New(m.newClients(t), n).Lock)
	}
	// Several cancelled Locks, each on its own Client: each may meet the
	// order that leaves its grant.
	const cancelledLocks = 4
	stopped := make(chan struct{})
	var names []string
	for i := range cancelledLocks {
		n := fmt.Sprintf("redlock:long-stall:%d", i)
		names = append(names, n)
		l := New(m.newClients(t), n)
		calls = append(calls, func(ctx context.Context) error { <-stopped; return l.Lock(ctx) })
	}

	deadline := time.Now().Add(500 * time.Millisecond)
	var wg sync.WaitGroup
	errs := make([]error, len(calls))
	for i, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithDeadline(bg(), deadline)
			defer cancel()
			errs[i] = call(ctx)
		}()
	}
	time.Sleep(200 * time.Millisecond)
	srv.Pause()
	close(stopped)
	time.Sleep(5 * time.Second)
	srv.Resume()
	wg.Wait()
	for i, err := range errs {
		require.ErrorIs(t, err, context.DeadlineExceeded, "call %d", i)
	}
	rc := m.raw[0]
	end := time.Now().Add(2 * time.Second)
	for _, name := range names {
		for ; ; time.Sleep(20 * time.Millisecond) {
			n, err := rc.Do(bg(), rc.B().Exists().Key(name).Build()).AsInt64()
			require.NoError(t, err)
			if n == 0 {
				break
			}
			if time.Now().After(end) {
				v, _ := rc.Do(bg(), rc.B().Get().Key(name).Build()).ToString()
				pttl, _ := rc.Do(bg(), rc.B().Pttl().Key(name).Build()).AsInt64()
				t.Fatalf("2 s after the node resumed, %q still holds %q (PTTL %d ms): a cancelled Lock's grant", name, v, pttl)
			}
		}
		other := New(m.newClients(t), name)
		ok, err := other.TryLock(bg())
		require.NoError(t, err)
		require.True(t, ok, "another client cannot lock %q", name)
		require.NoError(t, other.Unlock(bg()))
	}
}

package deploytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// WaitReplicas on a Cluster, attacked (issue 17): a caller whose ctx ends
// while the WAIT waits, multilocks over several shards and over one slot,
// a semaphore, and a fair lock's hand-over — with one shard's replica
// paused, nothing stays granted that the caller was not told it holds.
func TestWaitReplicasOnAClusterLeavesNothingHeldThatWasNotGranted(t *testing.T) {
	t.Parallel() // its own servers and names; every bound is seconds wide
	cl := redistest.StartClusterWithReplicas(t, 3, 1)
	bg := context.Background()
	masterHas := func(key string) bool {
		n, err := redistest.Do(t, cl.MasterFor(key).Client(t), "EXISTS", key).AsInt64()
		require.NoError(t, err)
		return n == 1
	}
	// gone waits for key to leave its master (an undo is a Client task);
	// 10 s: an undo is bounded by CompensateTimeout (2 s) past its
	// acquire's reply, itself bounded by the WAIT's timeout.
	gone := func(key string) {
		t.Helper()
		assert.Eventually(t, func() bool { return !masterHas(key) }, 10*time.Second, 20*time.Millisecond,
			"%s rolled back on its master", key)
	}
	pause := func(key string) func() {
		t.Helper()
		replica, err := cl.PauseReplica(key)
		require.NoError(t, err)
		resumed := false
		t.Cleanup(func() {
			if !resumed {
				replica.Resume()
			}
		})
		return func() { replica.Resume(); resumed = true }
	}

	for _, wait := range []time.Duration{500 * time.Millisecond, 5 * time.Second} {
		t.Run(fmt.Sprintf("ctx ends mid-WAIT %v", wait), func(t *testing.T) {
			// A WAIT of 5 s outlives CompensateTimeout past the caller's
			// end: the acquire's reply is then cut off and the undo goes
			// blind (it acts only on this acquire's grant). The release
			// script is not cached on the node yet (a fresh name's first
			// release): sent with a WAIT, its NOSCRIPT came back only when
			// the undo's bound had run out, and the grant stayed held for
			// its whole lease (seen failing before undos went without a WAIT, engine.Undo).
			name := fmt.Sprintf("chost:cancel:%v", wait)
			c := redisync.New(cl.Client(t), redisync.WithWaitReplicas(1, wait))
			defer c.Close()
			m := rlock.New(c, name)
			resume := pause(name)
			ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
			start := time.Now()
			err := m.Lock(ctx)
			took := time.Since(start)
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)
			// Generous: the ctx's 200 ms plus a loaded machine's stalls.
			assert.Less(t, took, 2*time.Second, "Lock returns when its ctx ends, not when the WAIT does")
			assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld)
			gone(name)
			resume()
			other := redisync.New(cl.Client(t), redisync.WithWaitReplicas(1, time.Second))
			defer other.Close()
			o := rlock.New(other, name)
			ok, err := o.TryLock(bg)
			require.NoError(t, err)
			assert.True(t, ok, "nobody holds it")
			require.NoError(t, o.Unlock(bg))
			ok, err = m.TryLock(bg)
			require.NoError(t, err, "the handle works again")
			assert.True(t, ok)
			require.NoError(t, m.Unlock(bg))
		})
	}

	t.Run("Unlock with a short ctx behind a lagging replica releases", func(t *testing.T) {
		// The hold was acknowledged; then the replica lags and the release
		// script is not cached on the node (SCRIPT FLUSH: a fresh node, a
		// failover). EVALSHA's NOSCRIPT comes back only with the WAIT's
		// reply, so a WAIT of the configured 5 s outlived both the caller's
		// 300 ms and the background release's bound (CompensateTimeout),
		// and the key stayed held for its whole lease, renewals stopped
		// (seen failing before the WAIT was bounded by the ctx).
		name := "chost:unlock-lagging"
		c := redisync.New(cl.Client(t), redisync.WithWaitReplicas(1, 5*time.Second))
		defer c.Close()
		m := rlock.New(c, name)
		require.NoError(t, m.Lock(bg))
		redistest.Do(t, cl.MasterFor(name).Client(t), "SCRIPT", "FLUSH")
		resume := pause(name)
		ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
		err := m.Unlock(ctx)
		cancel()
		if err != nil {
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		}
		gone(name)
		resume()
	})

	t.Run("multilock over three shards", func(t *testing.T) {
		c := redisync.New(cl.Client(t), redisync.WithWaitReplicas(1, 300*time.Millisecond))
		defer c.Close()
		names := []string{"chost:multi:a"}
		for len(names) < 3 {
			var cand string
			for i := 0; ; i++ {
				cand = fmt.Sprintf("chost:multi:%d", i)
				fresh := true
				for _, n := range names {
					fresh = fresh && cl.MasterFor(n) != cl.MasterFor(cand)
				}
				if fresh {
					break
				}
			}
			names = append(names, cand)
		}
		var parts []redisync.Locker
		for _, n := range names {
			parts = append(parts, rlock.New(c, n))
		}
		mu := multilock.New(parts...)
		require.False(t, mu.Atomic())
		require.NoError(t, mu.Lock(bg))
		require.NoError(t, mu.Unlock(bg))
		for _, victim := range names {
			resume := pause(victim)
			err := mu.Lock(bg)
			resume()
			assert.ErrorIs(t, err, redisync.ErrNotReplicated, "paused %s", victim)
			assert.ErrorIs(t, mu.Err(), redisync.ErrNotHeld)
			for _, n := range names {
				gone(n)
			}
		}
		require.NoError(t, mu.Lock(bg))
		require.NoError(t, mu.Unlock(bg))
	})

	t.Run("multilock in one slot (one script)", func(t *testing.T) {
		c := redisync.New(cl.Client(t), redisync.WithWaitReplicas(1, 300*time.Millisecond))
		defer c.Close()
		names := []string{"{chost:slot}:a", "{chost:slot}:b", "{chost:slot}:c"}
		mu := multilock.New(rlock.New(c, names[0]), rlock.New(c, names[1]), rlock.New(c, names[2]))
		require.True(t, mu.Atomic())
		resume := pause(names[0])
		err := mu.Lock(bg)
		resume()
		assert.ErrorIs(t, err, redisync.ErrNotReplicated)
		for _, n := range names {
			gone(n)
		}
		require.NoError(t, mu.Lock(bg))
		require.NoError(t, mu.Unlock(bg))
	})

	t.Run("semaphore", func(t *testing.T) {
		c := redisync.New(cl.Client(t), redisync.WithWaitReplicas(1, 300*time.Millisecond))
		defer c.Close()
		const name = "chost:sem"
		s := semaphore.New(c, name, 3)
		p, err := s.Acquire(bg, 1)
		require.NoError(t, err)
		resume := pause(name)
		_, err = s.Acquire(bg, 2)
		resume()
		assert.ErrorIs(t, err, redisync.ErrNotReplicated)
		assert.Eventually(t, func() bool {
			n, err := s.Available(bg)
			return err == nil && n == 2
		}, 10*time.Second, 20*time.Millisecond, "the refused permits came back")
		require.NoError(t, p.Release(bg))
		q, err := s.Acquire(bg, 3)
		require.NoError(t, err, "every permit free again")
		require.NoError(t, q.Release(bg))
	})

	t.Run("reads wait for no replica", func(t *testing.T) {
		// A read-only script (latch Count, the lock inspections) writes
		// nothing for a replica to acknowledge: a paused replica must not
		// turn it into ErrNotReplicated.
		c := redisync.New(cl.Client(t), redisync.WithWaitReplicas(1, 300*time.Millisecond))
		defer c.Close()
		const name = "chost:read"
		l := latch.New(c, name)
		m := rlock.New(c, name+":lock")
		for range 3 { // several writes, so the pooled connections have written
			_, err := l.TrySetCount(bg, 2)
			require.NoError(t, err)
			require.NoError(t, m.Lock(bg))
			require.NoError(t, m.Unlock(bg))
			_, err = l.Delete(bg)
			require.NoError(t, err)
		}
		_, err := l.TrySetCount(bg, 2)
		require.NoError(t, err)
		resume := pause(name)
		for range 3 {
			n, err := l.Count(bg)
			require.NoError(t, err, "latch Count")
			assert.EqualValues(t, 2, n)
			_, err = m.IsLocked(bg)
			require.NoError(t, err, "IsLocked")
		}
		resume()
		_, err = l.Delete(bg)
		require.NoError(t, err)
	})

	t.Run("fair lock hand-over", func(t *testing.T) {
		c := redisync.New(cl.Client(t), redisync.WithWaitReplicas(1, 300*time.Millisecond))
		defer c.Close()
		const name = "chost:fair"
		holder, waiter := fairlock.New(c, name), fairlock.New(c, name)
		require.NoError(t, holder.Lock(bg))
		got := make(chan error, 1)
		go func() { got <- waiter.Lock(bg) }()
		time.Sleep(200 * time.Millisecond) // the waiter queues (either order is fine)
		require.NoError(t, holder.Unlock(bg))
		select {
		case err := <-got:
			require.NoError(t, err, "woken and granted")
		case <-time.After(10 * time.Second):
			t.Fatal("the waiter was not granted")
		}
		require.NoError(t, waiter.Unlock(bg))
		gone(name)
	})
}

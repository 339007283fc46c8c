package fairlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
)

// WithRedissonQueue (issue 16 item 4): waiters use Redisson's RFairLock
// queue, list "redisson_lock_queue:{N}" and deadline zset
// "redisson_lock_timeout:{N}", and are woken on
// "redisson_lock__channel:{N}:<owner>".

func TestRedissonQueueGrantsInArrivalOrder(t *testing.T) {
	e := setup(t, redisync.WithMaxPoll(30*time.Second))
	const name = "fair:redisson-order"
	const queue, timeouts = "redisson_lock_queue:{" + name + "}", "redisson_lock_timeout:{" + name + "}"
	wait := 2 * time.Minute
	a := New(e.C, name, WithRedissonQueue(wait))
	require.NoError(t, a.Lock(bg()))
	b, c := New(e.C, name, WithRedissonQueue(wait)), New(e.C, name, WithRedissonQueue(wait))
	order := make(chan string, 2)
	lock := func(m *Mutex, label string) {
		go func() {
			if err := m.Lock(bg()); err != nil {
				order <- err.Error()
				return
			}
			order <- label
		}()
	}
	queued := func(n int) []string {
		var q []string
		eventually(t, 10*time.Second, func() bool {
			q, _ = e.Do(t, "LRANGE", queue, "0", "-1").AsStrSlice()
			return len(q) == n
		}, "waiters queued")
		return q
	}
	lock(b, "b")
	queued(1)
	lock(c, "c")
	assert.Equal(t, []string{b.Owner(), c.Owner()}, queued(2))
	// Redisson's deadlines: the first waiter's is now + the lock's PTTL +
	// the wait; each next one's is the previous one's + the wait.
	db, err := e.Do(t, "ZSCORE", timeouts, b.Owner()).AsFloat64()
	require.NoError(t, err)
	dc, err := e.Do(t, "ZSCORE", timeouts, c.Owner()).AsFloat64()
	require.NoError(t, err)
	assert.InDelta(t, wait.Milliseconds(), dc-db, 1)

	released := time.Now()
	require.NoError(t, a.Unlock(bg()))
	select {
	case got := <-order:
		require.Equal(t, "b", got)
	case <-time.After(5 * time.Second):
		t.Fatal("the head was not woken by the release")
	}
	t.Logf("release -> head's grant %v", time.Since(released))
	// When the head took the lock, the others moved up by the wait.
	dc2, err := e.Do(t, "ZSCORE", timeouts, c.Owner()).AsFloat64()
	require.NoError(t, err)
	assert.InDelta(t, dc-float64(wait.Milliseconds()), dc2, 1)
	require.NoError(t, b.Unlock(bg()))
	select {
	case got := <-order:
		require.Equal(t, "c", got)
	case <-time.After(5 * time.Second):
		t.Fatal("the next head was not woken")
	}
	require.NoError(t, c.Unlock(bg()))
	e.WaitEmpty(t)
}

func TestRedissonQueueCancelledWaiterLeaves(t *testing.T) {
	e := setup(t)
	const name = "fair:redisson-leave"
	const queue, timeouts = "redisson_lock_queue:{" + name + "}", "redisson_lock_timeout:{" + name + "}"
	a := New(e.C, name, WithRedissonQueue(0))
	require.NoError(t, a.Lock(bg()))
	b := New(e.C, name, WithRedissonQueue(0))
	ok, err := b.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok)
	assert.False(t, e.Exists(t, queue), "TryLock never queues")
	ctx, cancel := context.WithTimeout(bg(), 300*time.Millisecond)
	defer cancel()
	assert.True(t, errors.Is(b.Lock(ctx), context.DeadlineExceeded))
	assert.False(t, e.Exists(t, queue), "a cancelled waiter leaves the list")
	assert.False(t, e.Exists(t, timeouts), "and the deadlines")
	require.NoError(t, a.Unlock(bg()))
	e.WaitEmpty(t)
}

// A waiter whose Lock ctx ends while the server is stopped for longer than
// one send of its leave is bounded by (engine.CompensateTimeout: the
// attempt in flight, its undo and the leave each got one) still leaves the
// queue once the server is back: the Client task sends the leave again
// until it is answered. Otherwise its place stays for Redisson's wait plus
// the lease (5.5 min by default) and nobody else gets the free lock.
func TestRedissonQueueWaiterCancelledInALongStallLeavesWhenTheServerReturns(t *testing.T) {
	e := setup(t)
	const name = "fair:redisson-long-stall"
	const queue = "redisson_lock_queue:{" + name + "}"
	holder := New(e.Client(t), name, WithRedissonQueue(0))
	require.NoError(t, holder.Lock(bg()))
	w := New(e.C, name, WithRedissonQueue(0))
	ctx, cancel := context.WithTimeout(bg(), 600*time.Millisecond)
	defer cancel()
	got := make(chan error, 1)
	go func() { got <- w.Lock(ctx) }()
	eventually(t, 2*time.Second, func() bool { return e.Int(t, "LLEN", queue) == 1 }, "the waiter queued")
	e.Srv.Pause()
	time.Sleep(5 * time.Second)
	e.Srv.Resume()
	require.ErrorIs(t, <-got, context.DeadlineExceeded)
	require.NoError(t, holder.Unlock(bg()))
	third := New(e.Client(t), name, WithRedissonQueue(0))
	ctx3, cancel3 := context.WithTimeout(bg(), 3*time.Second)
	defer cancel3()
	err := third.Lock(ctx3)
	q, _ := e.Do(t, "LRANGE", queue, "0", "-1").AsStrSlice()
	require.NoError(t, err, "the queue still holds %v (the cancelled waiter is %s)", q, w.Owner())
	require.NoError(t, third.Unlock(bg()))
	e.WaitEmpty(t)
}

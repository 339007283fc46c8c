package deploytest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/redlock"
)

// TestQueueAndRedlockReadsAnswerUnderOOM goes past
// TestLockInspectionsAnswerUnderOOM: fairlock's Queue (its own queue, a
// zset, and Redisson's, a list) and Redlock's inspections (Holders with
// the holder's record, IsLocked, HoldCount, TTL) read under maxmemory with
// noeviction, and a key of another type is still the typed wrong-kind
// error. (They read in one MULTI, and Redis refuses every command queued in
// a MULTI then: they answered "EXECABORT Transaction discarded because of
// previous errors".)
func TestQueueAndRedlockReadsAnswerUnderOOM(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	bg := context.Background()
	c := redisync.New(rc)
	defer c.Close()

	// One waiter in each kind of queue, behind a holder. Its next attempt
	// (a write, refused under OOM) is due only when the holder's lease
	// (30 s, the default watchdog timeout) would run out: its polls are a
	// minute apart, its heartbeats too (waiter timeout 3 min). The reads
	// below take about a second; a stall of 30 s would show as the
	// waiter's OOM error, not as a pass.
	slow := redisync.New(rc, redisync.WithMaxPoll(time.Minute))
	defer slow.Close()
	own := fairlock.New(c, "oomq:f")
	redisson := fairlock.New(c, "oomq:fr", fairlock.WithRedissonQueue(0))
	waiters := []*fairlock.Mutex{
		fairlock.New(slow, "oomq:f", fairlock.WithWaiterTimeout(3*time.Minute)),
		fairlock.New(slow, "oomq:fr", fairlock.WithRedissonQueue(0)),
	}
	require.NoError(t, own.Lock(bg))
	require.NoError(t, redisson.Lock(bg))
	wctx, cancel := context.WithCancel(bg)
	waitErrs := make([]error, len(waiters))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i, w := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			waitErrs[i] = w.Lock(wctx)
		}()
	}
	for _, holder := range []*fairlock.Mutex{own, redisson} {
		require.Eventually(t, func() bool { q, err := holder.Queue(bg); return err == nil && len(q) == 1 }, 20*time.Second,
			10*time.Millisecond, "the waiter queued")
	}
	// The Redlock's holder record comes with its first renewal, a third of
	// its lease after the grant, before the memory runs out.
	short := redisync.New(rc, redisync.WithWatchdogTimeout(1500*time.Millisecond))
	defer short.Close()
	rl := redlock.New([]*redisync.Client{short}, "oomq:redlock")
	require.NoError(t, rl.Lock(bg))
	locktest.AwaitAnyRecord(t, rc, "oomq:redlock", 20*time.Second)
	// Keys of another type under a queue's name and a Redlock's.
	wrongQueue, _ := keys.Derived(keys.FairQueuePrefix, "oomq:wrong")
	redistest.Do(t, rc, "SET", wrongQueue, "user data", "PX", "600000")
	redistest.Do(t, rc, "HSET", "oomq:redlock:wrong", "user", "data")
	redistest.ExhaustMemory(t, rc)

	for i, holder := range []*fairlock.Mutex{own, redisson} {
		q, err := holder.Queue(bg)
		require.NoError(t, err, "%d: Queue under OOM", i)
		assert.Equal(t, []string{waiters[i].Owner()}, q, "%d", i)
	}
	q, err := fairlock.New(c, "oomq:none").Queue(bg)
	require.NoError(t, err, "an empty queue under OOM")
	assert.Empty(t, q)
	_, err = fairlock.New(c, "oomq:wrong").Queue(bg)
	var wk *errs.WrongKindError
	require.ErrorAs(t, err, &wk, "a string under the queue's name")
	assert.Equal(t, wrongQueue, wk.Key)
	assert.Contains(t, err.Error(), `fairlock "oomq:wrong"`)

	hs, err := rl.Holders(bg)
	require.NoError(t, err, "redlock Holders under OOM")
	require.Len(t, hs, 1)
	assert.Equal(t, 1, hs[0].Count)
	assert.Positive(t, hs[0].TTL)
	require.NotNil(t, hs[0].Info, "the holder's record is read too")
	assert.NotEmpty(t, hs[0].Info.Host)
	ok, err := rl.IsLocked(bg)
	require.NoError(t, err)
	assert.True(t, ok)
	n, err := rl.HoldCount(bg)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	ttl, err := rl.TTL(bg)
	require.NoError(t, err)
	assert.Positive(t, ttl)
	_, err = redlock.New([]*redisync.Client{c}, "oomq:redlock:wrong").Holders(bg)
	require.ErrorAs(t, err, &wk, "a hash under the Redlock's name")
	assert.Equal(t, "oomq:redlock:wrong", wk.Key)

	// Leaving the queue and releasing run under OOM (they free memory).
	cancel()
	wg.Wait()
	for i, err := range waitErrs {
		assert.True(t, errors.Is(err, context.Canceled), "%d: the waiter's Lock: %v (an OOM error: it attempted while the test read)", i, err)
	}
	require.NoError(t, rl.Unlock(bg))
	require.NoError(t, own.Unlock(bg))
	require.NoError(t, redisson.Unlock(bg))
}

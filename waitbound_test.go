package redisync_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// waitBoundMargin is what a waiter may take past the expiry of the lease it
// waits behind (plus its kind's own retry pace): a few round trips and the
// stalls of a loaded 2-core machine. A waiter that sleeps a whole poll
// interval (1 s to 5 s here) past the expiry is far outside it.
const waitBoundMargin = 300 * time.Millisecond

// A kind of hand-over: the holder's Locker with a fixed lease, and the
// waiter's Locker for the same name on another Client.
type waitBoundKind struct {
	kind   string
	holder func(c *redisync.Client, name string, lease time.Duration) redisync.Locker
	waiter func(c *redisync.Client, name string) redisync.Locker
	// pace is the kind's own wait between attempts when a busy reply gives
	// no hint to shorten it (redlock's retry delay, multilock's backoff).
	pace time.Duration
}

var waitBoundKinds = []waitBoundKind{
	{kind: "rlock",
		holder: func(c *redisync.Client, n string, l time.Duration) redisync.Locker {
			return rlock.New(c, n, rlock.WithLease(l))
		},
		waiter: func(c *redisync.Client, n string) redisync.Locker { return rlock.New(c, n) }},
	{kind: "fairlock",
		holder: func(c *redisync.Client, n string, l time.Duration) redisync.Locker {
			return fairlock.New(c, n, fairlock.WithLease(l))
		},
		waiter: func(c *redisync.Client, n string) redisync.Locker { return fairlock.New(c, n) }},
	{kind: "fairlock Redisson queue",
		holder: func(c *redisync.Client, n string, l time.Duration) redisync.Locker {
			return fairlock.New(c, n, fairlock.WithLease(l), fairlock.WithRedissonQueue(0))
		},
		waiter: func(c *redisync.Client, n string) redisync.Locker {
			return fairlock.New(c, n, fairlock.WithRedissonQueue(0))
		}},
	{kind: "rwlock read behind a writer",
		holder: func(c *redisync.Client, n string, l time.Duration) redisync.Locker {
			return rwlock.New(c, n, rwlock.WithLease(l)).WriteLocker()
		},
		waiter: func(c *redisync.Client, n string) redisync.Locker { return rwlock.New(c, n).ReadLocker() }},
	{kind: "rwlock write behind a reader",
		holder: func(c *redisync.Client, n string, l time.Duration) redisync.Locker {
			return rwlock.New(c, n, rwlock.WithLease(l)).ReadLocker()
		},
		waiter: func(c *redisync.Client, n string) redisync.Locker { return rwlock.New(c, n).WriteLocker() }},
	{kind: "semaphore",
		holder: func(c *redisync.Client, n string, l time.Duration) redisync.Locker {
			return semaphore.New(c, n, 1, semaphore.WithLease(l)).Locker(1)
		},
		waiter: func(c *redisync.Client, n string) redisync.Locker { return semaphore.New(c, n, 1).Locker(1) }},
	{kind: "redlock", pace: 120 * time.Millisecond, // its default retry delay's upper end
		holder: func(c *redisync.Client, n string, l time.Duration) redisync.Locker {
			return redlock.New([]*redisync.Client{c}, n, redlock.WithLease(l))
		},
		waiter: func(c *redisync.Client, n string) redisync.Locker {
			return redlock.New([]*redisync.Client{c}, n)
		}},
	{kind: "multilock one script", pace: multilock.MaxBackoff,
		holder: func(c *redisync.Client, n string, l time.Duration) redisync.Locker {
			return rlock.New(c, n+":b", rlock.WithLease(l))
		},
		waiter: func(c *redisync.Client, n string) redisync.Locker {
			return multilock.New(rlock.New(c, n+":a"), rlock.New(c, n+":b"))
		}},
	{kind: "multilock each", pace: multilock.MaxBackoff,
		holder: func(c *redisync.Client, n string, l time.Duration) redisync.Locker {
			return rlock.New(c, n+":b", rlock.WithLease(l))
		},
		waiter: func(c *redisync.Client, n string) redisync.Locker {
			return multilock.New(semaphore.New(c, n+":a", 1).Locker(1), rlock.New(c, n+":b"))
		}},
}

// The wait bound is a property: a waiter behind a lease that runs out (its
// holder crashed: here its Client is closed, which releases nothing) gets
// the lock within the lease plus a small bound, whatever its MaxPoll — it
// never sleeps a poll interval on a busy reply that says the lease has (all
// but) run out. Every kind runs its hand-overs at once, with leases and
// MaxPoll values drawn from a logged seed.
func TestWaiterBehindAnExpiringLeaseGetsTheLockWithinTheLeaseAndASmallBound(t *testing.T) {
	env := locktest.Setup(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const handovers = 6 // per kind; about one in five met a 0 hint before its fix
	for i, k := range waitBoundKinds {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		maxPoll := time.Second + time.Duration(r.Int64N(int64(4*time.Second))) // a whole MaxPoll late is far past the bound
		leases := make([]time.Duration, handovers)
		for j := range leases {
			leases[j] = 150*time.Millisecond + time.Duration(r.Int64N(int64(time.Second)))
		}
		t.Run(k.kind, func(t *testing.T) {
			t.Parallel()
			holders := env.Client(t)
			waiters := env.Client(t, redisync.WithMaxPoll(maxPoll))
			ctx := context.Background()
			taken := make([]time.Time, handovers)
			for j, lease := range leases {
				taken[j] = time.Now() // the lease runs out at most lease after this
				require.NoError(t, k.holder(holders, fmt.Sprintf("wb:%d:%d", i, j), lease).Lock(ctx))
			}
			require.NoError(t, holders.Close()) // the holder crashes: its leases run out in Redis
			var wg sync.WaitGroup
			for j, lease := range leases {
				wg.Go(func() {
					w := k.waiter(waiters, fmt.Sprintf("wb:%d:%d", i, j))
					lctx, cancel := context.WithTimeout(ctx, lease+k.pace+10*time.Second)
					defer cancel()
					if !assert.NoError(t, w.Lock(lctx), "lease %v, MaxPoll %v", lease, maxPoll) {
						return
					}
					got := time.Since(taken[j])
					assert.GreaterOrEqual(t, got, lease-5*time.Millisecond,
						"the waiter got in before the holder's lease ran out")
					assert.LessOrEqual(t, got, lease+k.pace+waitBoundMargin,
						"lease %v, MaxPoll %v: the waiter got the lock %v after the lease ran out",
						lease, maxPoll, (got - lease).Round(time.Millisecond))
					assert.NoError(t, w.Unlock(ctx))
				})
			}
			wg.Wait()
		})
	}
}

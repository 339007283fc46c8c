package redisync_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
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
// waits behind (plus its kind's own retry pace): a round trip or two and
// the stalls of a loaded 2-core machine (a timer there fires up to ~300 ms
// late). A waiter that sleeps a whole poll interval (2 s to 5 s here) or a
// queue heartbeat (a third of the 5 s waiter timeout) past the expiry is far
// outside it.
const waitBoundMargin = 500 * time.Millisecond

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
// but) run out. Leases and MaxPoll values are drawn from a logged seed. A
// retry meets the lease's last millisecond by chance (about one hand-over
// in five on an idle machine, fewer under load);
// TestAWaiterThatReadsAZeroPTTLTriesAgainAtOnce makes it certain.
func TestWaiterBehindAnExpiringLeaseGetsTheLockWithinTheLeaseAndASmallBound(t *testing.T) {
	env := locktest.Setup(t)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const handovers = 8 // per kind
	type handover struct {
		k       waitBoundKind
		name    string
		lease   time.Duration
		taken   time.Time // the lease runs out at most lease after this
		waiters *redisync.Client
		maxPoll time.Duration
	}
	// The kinds run in waves of three: a waiter's retry meets the lease's
	// last millisecond (the 0 hint) only when its round trip is short, so
	// fewer waiters at once keep the test's teeth.
	const wave = 3
	for first := 0; first < len(waitBoundKinds); first += wave {
		var all []handover
		for i := first; i < min(first+wave, len(waitBoundKinds)); i++ {
			k := waitBoundKinds[i]
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			maxPoll := 2*time.Second + time.Duration(r.Int64N(int64(3*time.Second))) // a whole MaxPoll late is far past the bound
			holders := env.Client(t)
			waiters := env.Client(t, redisync.WithMaxPoll(maxPoll))
			for j := range handovers {
				h := handover{k: k, name: fmt.Sprintf("wb:%d:%d", i, j), waiters: waiters, maxPoll: maxPoll,
					lease: 200*time.Millisecond + time.Duration(r.Int64N(int64(600*time.Millisecond)))}
				h.taken = time.Now()
				require.NoError(t, k.holder(holders, h.name, h.lease).Lock(ctx), k.kind)
				all = append(all, h)
			}
			require.NoError(t, holders.Close()) // the holder crashes: its leases run out in Redis
		}
		var wg sync.WaitGroup
		for _, h := range all {
			wg.Go(func() {
				w := h.k.waiter(h.waiters, h.name)
				lctx, cancel := context.WithTimeout(ctx, h.lease+h.k.pace+10*time.Second)
				defer cancel()
				if !assert.NoError(t, w.Lock(lctx), "%s: lease %v, MaxPoll %v", h.k.kind, h.lease, h.maxPoll) {
					return
				}
				got := time.Since(h.taken)
				assert.GreaterOrEqual(t, got, h.lease-5*time.Millisecond,
					"%s: the waiter got in before the holder's lease ran out", h.k.kind)
				assert.LessOrEqual(t, got, h.lease+h.k.pace+waitBoundMargin,
					"%s: lease %v, MaxPoll %v: the waiter got the lock %v after the lease ran out",
					h.k.kind, h.lease, h.maxPoll, (got - h.lease).Round(time.Millisecond))
				assert.NoError(t, w.Unlock(ctx), h.k.kind)
			})
		}
		wg.Wait()
	}
}

// holdAcrossTheLeaseEnd is a script that keeps the server busy until
// ARGV[1] (server time, µs) and then leaves every key in KEYS to expire at
// the next millisecond, returning once that millisecond has begun: the
// commands queued behind it run while the keys' PTTL is 0. It runs on a
// test's own keys only. Reply: how many keys it set (each still existed,
// as a script reads keys at its start time).
const holdAcrossTheLeaseEnd = `
local function now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
while now() < tonumber(ARGV[1]) do end
local ms = math.floor(now() / 1000)
local set = 0
for _, k in ipairs(KEYS) do
  set = set + redis.call('pexpireat', k, ms + 1)
end
while now() < (ms + 1) * 1000 + 20 do end
return set
`

// The case the property above meets by chance, made certain: a waiter's
// retry queues behind a script that holds the server across the holder's
// lease end and leaves the lock to expire at the next millisecond, so the
// retry reads a PTTL of 0. The waiter tries again at once and gets the lock
// — it does not sleep its MaxPoll (5 s) or a queue heartbeat. (Semaphore
// hints count from its holders' expiries and are at least 1 ms; redlock
// waits its retry delay: neither reads a PTTL.)
func TestAWaiterThatReadsAZeroPTTLTriesAgainAtOnce(t *testing.T) {
	env := locktest.Setup(t)
	ctx := context.Background()
	const lease = 600 * time.Millisecond
	var rows []waitBoundKind
	for _, k := range waitBoundKinds {
		switch k.kind {
		case "rlock", "fairlock", "rwlock read behind a writer", "rwlock write behind a reader", "multilock one script":
			rows = append(rows, k)
		}
	}
	require.Len(t, rows, 5)
	holders := env.Client(t)
	waiters := env.Client(t, redisync.WithMaxPoll(5*time.Second))
	lockKeys := make([]string, len(rows))
	start := time.Now()
	for i, k := range rows {
		name := fmt.Sprintf("zero:%d", i)
		lockKeys[i] = name
		if k.kind == "multilock one script" {
			lockKeys[i] = name + ":b" // the component the holder holds
		}
		require.NoError(t, k.holder(holders, name, lease).Lock(ctx), k.kind)
	}
	last := time.Now()
	require.NoError(t, holders.Close()) // the holder crashes
	got := make([]time.Duration, len(rows))
	var wg sync.WaitGroup
	for i, k := range rows {
		wg.Go(func() {
			w := k.waiter(waiters, fmt.Sprintf("zero:%d", i))
			lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			if assert.NoError(t, w.Lock(lctx), k.kind) {
				got[i] = time.Since(start)
				assert.NoError(t, w.Unlock(ctx), k.kind)
			}
		})
	}
	// Hold the server from well before the first lease ends until well
	// after the last: every waiter's retry at its lease's end queues.
	time.Sleep(time.Until(start.Add(lease - 250*time.Millisecond)))
	until := last.Add(lease + 250*time.Millisecond)
	set, err := env.RC.Do(ctx, env.RC.B().Eval().Script(holdAcrossTheLeaseEnd).Numkeys(int64(len(lockKeys))).
		Key(lockKeys...).Arg(strconv.FormatInt(until.UnixMicro(), 10)).Build()).AsInt64()
	require.NoError(t, err)
	require.EqualValues(t, len(lockKeys), set, "a lock expired before the script held the server")
	released := time.Since(start)
	wg.Wait()
	for i, k := range rows {
		assert.LessOrEqual(t, got[i], released+waitBoundMargin,
			"%s: the waiter got the lock %v after the PTTL-0 reply", k.kind, (got[i] - released).Round(time.Millisecond))
	}
}

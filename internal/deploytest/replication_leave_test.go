package deploytest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// startReplicated starts a master and one replica linked to it.
func startReplicated(t *testing.T) (master, replica *redistest.Server) {
	t.Helper()
	master = redistest.Start(t)
	// Setup: the first sync starts at once (the default waits 5 s for more
	// replicas).
	redistest.Do(t, master.Client(t), "CONFIG", "SET", "repl-diskless-sync-delay", "0")
	host, port, _ := strings.Cut(master.Addr(), ":")
	replica = redistest.StartArgs(t, "--replicaof", host, port)
	rrc := replica.Client(t)
	require.Eventually(t, func() bool {
		info, err := redistest.Do(t, rrc, "INFO", "replication").ToString()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, 30*time.Second, 50*time.Millisecond, "setup: replica linked")
	return master, replica
}

// leaveCase is one primitive's waiter: hold takes what the waiter waits
// for and returns its release; wait is the waiter's blocking call; queued
// reports whether the waiter is still in the queue (or its claim still
// stands); next reports whether a newcomer gets in now (one attempt, which
// a waiter left in the queue would refuse).
type leaveCase struct {
	name   string
	hold   func(t *testing.T, c *redisync.Client) (release func())
	wait   func(ctx context.Context, c *redisync.Client) error
	queued func(t *testing.T, raw rueidis.Client) bool
	next   func(t *testing.T, c *redisync.Client) bool
}

// TestWaitReplicasCancelledWaiterLeavesBehindLaggingReplica (issue 17
// follow-up): with WaitReplicas, a waiter whose ctx ends while a replica
// lags, and whose leave script is not cached on the master (SCRIPT FLUSH: a
// fresh node, a failover), leaves the queue at once, and the next waiter is
// not held back by it. Sent with a WAIT (engine.Background), the leave's
// NOSCRIPT came back only when the WAIT ended, and the EVAL's own WAIT held
// the call: it returned 1 to 1.6 s after the ctx ended, the waiter queued
// until the EVAL ran (seen failing in all four cases before engine.Undo).
// The WAIT's bound, half of what is left of the leave's 2 s, is what let
// the EVAL run at all.
//
// The waiter timeout is a minute, so a waiter left behind would stay listed
// for that long; every attempt of the waiter is past the test (MaxPoll a
// minute, the holder's lease 30 s), so what it does after its ctx ends is
// the leave alone.
func TestWaitReplicasCancelledWaiterLeavesBehindLaggingReplica(t *testing.T) {
	t.Parallel() // its own servers and names; every bound is seconds wide
	master, replica := startReplicated(t)
	raw := master.Client(t) // reads and SCRIPT FLUSH, no WAIT
	bg := context.Background()
	const waiterTimeout = time.Minute
	zcard := func(t *testing.T, key string) int64 {
		n, err := redistest.Do(t, raw, "ZCARD", key).AsInt64()
		require.NoError(t, err)
		return n
	}
	derived := func(prefix, name string) string { k, _ := keys.Derived(prefix, name); return k }
	fairCase := func(flavour string, opts ...fairlock.Option) leaveCase {
		name := "leave:fair:" + flavour
		opts = append(opts, fairlock.WithWaiterTimeout(waiterTimeout))
		var owner string
		return leaveCase{
			name: "fairlock " + flavour,
			hold: func(t *testing.T, c *redisync.Client) func() {
				m := fairlock.New(c, name, opts...)
				require.NoError(t, m.Lock(bg))
				return func() { require.NoError(t, m.Unlock(bg)) }
			},
			wait: func(ctx context.Context, c *redisync.Client) error {
				m := fairlock.New(c, name, opts...)
				owner = m.Owner()
				return m.Lock(ctx)
			},
			queued: func(t *testing.T, raw rueidis.Client) bool {
				c := redisync.New(raw)
				defer c.Close()
				q, err := fairlock.New(c, name, opts...).Queue(bg)
				require.NoError(t, err)
				return slices.Contains(q, owner)
			},
			next: func(t *testing.T, c *redisync.Client) bool {
				m := fairlock.New(c, name, opts...)
				ok, err := m.TryLock(bg)
				require.NoError(t, err)
				if ok {
					require.NoError(t, m.Unlock(bg))
				}
				return ok
			},
		}
	}
	const semName = "leave:sem"
	const rwName = "leave:rw"
	cases := []leaveCase{
		fairCase("default"),
		fairCase("redisson", fairlock.WithRedissonQueue(5*time.Second)),
		{
			name: "semaphore",
			hold: func(t *testing.T, c *redisync.Client) func() {
				p, err := semaphore.New(c, semName, 1, semaphore.WithWaiterTimeout(waiterTimeout)).Acquire(bg, 1)
				require.NoError(t, err)
				return func() { require.NoError(t, p.Release(bg)) }
			},
			wait: func(ctx context.Context, c *redisync.Client) error {
				_, err := semaphore.New(c, semName, 1, semaphore.WithWaiterTimeout(waiterTimeout)).Acquire(ctx, 1)
				return err
			},
			queued: func(t *testing.T, _ rueidis.Client) bool {
				return zcard(t, derived(keys.SemQueuePrefix, semName)) > 0
			},
			next: func(t *testing.T, c *redisync.Client) bool {
				p, ok, err := semaphore.New(c, semName, 1).TryAcquire(bg, 1)
				require.NoError(t, err)
				if ok {
					require.NoError(t, p.Release(bg))
				}
				return ok
			},
		},
		{
			// A reader holds; a writer (writer preference) waits, and its
			// claim holds new readers back until it is withdrawn.
			name: "rwlock waiting writer",
			hold: func(t *testing.T, c *redisync.Client) func() {
				rw := rwlock.New(c, rwName)
				require.NoError(t, rw.RLock(bg))
				return func() { require.NoError(t, rw.RUnlock(bg)) }
			},
			wait: func(ctx context.Context, c *redisync.Client) error {
				return rwlock.New(c, rwName, rwlock.WithWriterPreference(), rwlock.WithWaiterTimeout(waiterTimeout)).Lock(ctx)
			},
			queued: func(t *testing.T, _ rueidis.Client) bool {
				return zcard(t, derived(keys.RWWritersPrefix, rwName)) > 0
			},
			next: func(t *testing.T, c *redisync.Client) bool {
				rw := rwlock.New(c, rwName, rwlock.WithWriterPreference())
				ok, err := rw.TryRLock(bg)
				require.NoError(t, err)
				if ok {
					require.NoError(t, rw.RUnlock(bg))
				}
				return ok
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Not parallel: they share the replica, which each pauses.
			c := redisync.New(master.Client(t), redisync.WithWaitReplicas(1, 5*time.Second),
				redisync.WithMaxPoll(time.Minute))
			defer c.Close()
			release := tc.hold(t, c)
			// The waiter makes two or three attempts (before and after its
			// subscription is confirmed, and after a wake-up), each with a
			// WAIT, and then waits: its next attempt is its heartbeat, 20 s
			// on. Once the master has answered the WAITs and no more come
			// for a second, no attempt is in flight when the replica stops
			// (one would hold the call back until its reply, cut off after
			// engine.CompensateTimeout).
			waits := redistest.CommandCalls(t, raw, "wait")
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			got := make(chan error, 1)
			go func() { got <- tc.wait(ctx, c) }()
			require.Eventually(t, func() bool {
				return redistest.CommandCalls(t, raw, "wait") >= waits+2 && tc.queued(t, raw)
			}, 10*time.Second, 10*time.Millisecond, "setup: the waiter queued")
			for settled := time.Now(); time.Since(settled) < time.Second; time.Sleep(20 * time.Millisecond) {
				if n := redistest.CommandCalls(t, raw, "wait"); n != waits {
					waits, settled = n, time.Now()
				}
			}

			redistest.Do(t, raw, "SCRIPT", "FLUSH")
			replica.Pause()
			resumed := false
			resume := func() {
				if !resumed {
					replica.Resume()
					resumed = true
					require.Eventually(t, func() bool {
						n, err := redistest.Do(t, raw, "WAIT", "1", "100").AsInt64()
						return err == nil && n == 1
					}, 30*time.Second, 10*time.Millisecond, "the replica caught up")
				}
			}
			defer resume()
			cancelled := time.Now()
			cancel()
			var took time.Duration
			select {
			case err := <-got:
				took = time.Since(cancelled)
				require.ErrorIs(t, err, context.Canceled)
			case <-time.After(10 * time.Second):
				t.Fatal("the waiter did not return")
			}
			t.Logf("the waiter returned %v after its ctx ended", took)
			// Sent with a WAIT, the leave's EVAL (after the NOSCRIPT) waited
			// for the stopped replica for half of what was left of the
			// leave's 2 s bound: the call returned 1 s after its ctx ended
			// at least (1.5 s when the NOSCRIPT's own WAIT also waited,
			// its connection's last write not yet acknowledged). Without a
			// WAIT the leave is three round trips on loopback (EVALSHA,
			// NOSCRIPT, EVAL): 1 to 16 ms seen with the load average at
			// 13 on two cores. 500 ms leaves a loaded machine 30 times
			// that, and is half of what the WAIT takes at least (the
			// replica is stopped, so it cannot end early).
			assert.Less(t, took, 500*time.Millisecond, "the cancelled call returns at once (its leave waits for no replica)")
			assert.False(t, tc.queued(t, raw), "the waiter has left the queue when its call returns")
			resume()
			release()
			// 10 s: one attempt after the release; a waiter left in the
			// queue would hold it back for the waiter timeout (a minute).
			assert.Eventually(t, func() bool { return tc.next(t, c) }, 10*time.Second, 20*time.Millisecond,
				"a newcomer is not held back by the waiter that gave up")
		})
	}
}

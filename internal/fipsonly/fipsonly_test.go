//go:debug fips140=only

package fipsonly_test

import (
	"context"
	"crypto/fips140"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lockers are one of each kind on c (and, for redlock, on cs).
func lockers(c *redisync.Client, cs []*redisync.Client, round string) map[string]redisync.Locker {
	return map[string]redisync.Locker{
		"rlock":     rlock.New(c, "r"+round),
		"fairlock":  fairlock.New(c, "f"+round),
		"rwwrite":   rwlock.New(c, "rw"+round).WriteLocker(),
		"rwread":    rwlock.New(c, "rr"+round).ReadLocker(),
		"semaphore": semaphore.New(c, "s"+round, 2).Locker(1),
		"redlock":   redlock.New(cs, "rl"+round),
		"multilock": multilock.New(rlock.New(c, "m1"+round), rlock.New(c, "m2"+round)),
	}
}

// TestEveryPrimitiveRunsInFIPS140OnlyMode: in FIPS 140-only mode (a program
// importing redisync panicked at init there) every kind locks, is renewed by
// its watchdog and unlocks, a latch counts down, a rate limiter admits, and after SCRIPT FLUSH
// (NOSCRIPT for every digest learned) all of it works again.
func TestEveryPrimitiveRunsInFIPS140OnlyMode(t *testing.T) {
	require.True(t, fips140.Enforced(), "the test binary runs in FIPS 140-only mode")
	srvs := redistest.StartN(t, 3)
	var cs []*redisync.Client
	for _, s := range srvs {
		c := redisync.New(s.Client(t), redisync.WithWatchdogTimeout(600*time.Millisecond))
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	raw := srvs[0].Client(t)
	ctx := context.Background()
	for _, round := range []string{"a", "b"} {
		if round == "b" {
			for _, s := range srvs {
				redistest.Do(t, s.Client(t), "SCRIPT", "FLUSH")
			}
		}
		ls := lockers(cs[0], cs, round)
		for kind, l := range ls {
			require.NoError(t, l.Lock(ctx), "%s %s", kind, round)
		}
		// Two renewal rounds for every kind (a round is a script call per
		// layout on each server; the redlock's nodes count on their own).
		for _, s := range srvs {
			start := redistest.ScriptCalls(t, s.Client(t))
			require.Eventually(t, func() bool { return redistest.ScriptCalls(t, s.Client(t)) >= start+2 }, 10*time.Second, 10*time.Millisecond)
		}
		for kind, l := range ls {
			require.NoError(t, l.Err(), "%s %s: the hold was renewed", kind, round)
			require.NoError(t, l.Unlock(ctx), "%s %s", kind, round)
		}
		n, err := redistest.Do(t, raw, "EXISTS", "r"+round, "f"+round, "rw"+round, "rr"+round).AsInt64()
		require.NoError(t, err)
		require.Zero(t, n, "released")
		l := latch.New(cs[0], "l"+round)
		ok, err := l.TrySetCount(ctx, 1)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, l.CountDown(ctx))
		n, err = l.Count(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		lim := ratelimit.New(cs[0], "rate"+round, ratelimit.Every(time.Hour), 1)
		res, err := lim.Allow(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, 1, res.Allowed)
		require.NoError(t, lim.Reset(ctx, "k"))
	}
}

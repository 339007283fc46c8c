package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/watchdog"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// leaseLockers are a Locker of every primitive that takes a fixed lease,
// with lease d, on c.
func leaseLockers(c *redisync.Client, d time.Duration) map[string]redisync.Locker {
	return map[string]redisync.Locker{
		"rlock":           rlock.New(c, "min:rlock", rlock.WithLease(d)),
		"fairlock":        fairlock.New(c, "min:fair", fairlock.WithLease(d)),
		"fairlock/queue":  fairlock.New(c, "min:fairq", fairlock.WithLease(d), fairlock.WithRedissonQueue(0)),
		"rwlock.write":    rwlock.New(c, "min:rw", rwlock.WithLease(d)).WriteLocker(),
		"rwlock.read":     rwlock.New(c, "min:rw", rwlock.WithLease(d)).ReadLocker(),
		"semaphore":       semaphore.New(c, "min:sem", 2, semaphore.WithLease(d)).Locker(1),
		"redlock":         redlock.New([]*redisync.Client{c}, "min:red", redlock.WithLease(d)),
		"multilock/rlock": multilock.New(rlock.New(c, "min:ma", rlock.WithLease(d)), rlock.New(c, "min:mb")),
		"multilock/sem":   multilock.New(semaphore.New(c, "min:ms", 1, semaphore.WithLease(d)).Locker(1), rlock.New(c, "min:mc")),
	}
}

func commandCalls(t *testing.T, rc rueidis.Client) int64 {
	t.Helper()
	info, err := rc.Do(context.Background(), rc.B().Info().Section("commandstats").Build()).ToString()
	require.NoError(t, err)
	var n int64
	for cmd, calls := range redistest.CommandStats(info) {
		if cmd != "info" {
			n += calls
		}
	}
	return n
}

// Issue 22, defect 6: a lease shorter than the drift margin plus a round
// trip (1 ms and 2 ms were accepted) made every grant one the client gives
// back — TryLock said busy on a free lock, Lock waited forever. A lease
// below MinLease is refused by every primitive before any I/O, with
// ErrInvalidLease; a multilock with such a component returns it too,
// before any I/O. MinLease itself grants a free lock.
func TestLeaseBelowMinLeaseIsRefusedBeforeAnyIOAndMinLeaseGrants(t *testing.T) {
	env := locktest.Setup(t)
	ctx := context.Background()
	short := []time.Duration{0, -time.Second, time.Millisecond, 2 * time.Millisecond, redisync.MinLease - time.Microsecond}
	before := commandCalls(t, env.RC)
	for _, d := range short {
		for kind, l := range leaseLockers(env.C, d) {
			assert.ErrorIs(t, l.Lock(ctx), redisync.ErrInvalidLease, "%s WithLease(%v): Lock", kind, d)
			ok, err := l.TryLock(ctx)
			assert.False(t, ok)
			assert.ErrorIs(t, err, redisync.ErrInvalidLease, "%s WithLease(%v): TryLock", kind, d)
		}
	}
	_, err := semaphore.New(env.C, "min:sem", 2, semaphore.WithLease(time.Millisecond)).Acquire(ctx, 1)
	assert.ErrorIs(t, err, redisync.ErrInvalidLease)
	_, _, err = semaphore.New(env.C, "min:sem", 2, semaphore.WithLease(time.Millisecond)).TryAcquire(ctx, 1)
	assert.ErrorIs(t, err, redisync.ErrInvalidLease)
	assert.Equal(t, before, commandCalls(t, env.RC), "a refused lease sent commands to Redis")
	assert.Zero(t, env.Int(t, "DBSIZE"), "a refused lease wrote to Redis (a last-token key is a grant given back)")

	// MinLease leaves a round trip after the drift margin: a free lock is
	// granted (a grant whose reply came later than that is given back, so
	// a loaded machine may need a few tries; a 2 ms lease never got one).
	assert.GreaterOrEqual(t, redisync.MinLease-watchdog.Drift(redisync.MinLease), 5*time.Millisecond,
		"MinLease must leave a loaded machine's round trip after the drift margin")
	for kind, l := range leaseLockers(env.C, redisync.MinLease) {
		granted := false
		for range 20 {
			ok, err := l.TryLock(ctx)
			var q *redlock.QuorumError
			if !errors.As(err, &q) { // a node later than the node timeout (a quarter of MinLease): try again
				require.NoError(t, err, kind)
			}
			if ok {
				granted = true
				_ = l.Unlock(ctx) // the lease may already have run out
				break
			}
			time.Sleep(2 * redisync.MinLease) // a given-back grant is released, or expires
		}
		assert.True(t, granted, "%s WithLease(MinLease): no grant in 20 TryLocks on a free lock", kind)
	}
}

// TestInvalidLeaseErrorNamesTheLock: ErrInvalidLease's message names the
// primitive, the lock and the lease given, as ErrInvalidName's and
// InvalidOwnerError's do: with many locks configured from one lease
// setting, the log says which handle was refused.
func TestInvalidLeaseErrorNamesTheLock(t *testing.T) {
	env := locktest.Setup(t)
	ctx := context.Background()
	const name = "orders:42"
	errsOf := map[string]error{
		"rlock":     rlock.New(env.C, name, rlock.WithLease(time.Millisecond)).Lock(ctx),
		"fairlock":  fairlock.New(env.C, name, fairlock.WithLease(time.Millisecond)).Lock(ctx),
		"rwlock":    rwlock.New(env.C, name, rwlock.WithLease(time.Millisecond)).Lock(ctx),
		"redlock":   redlock.New([]*redisync.Client{env.C}, name, redlock.WithLease(time.Millisecond)).Lock(ctx),
		"semaphore": semaphore.New(env.C, name, 1, semaphore.WithLease(time.Millisecond)).Locker(1).Lock(ctx),
	}
	for kind, err := range errsOf {
		require.ErrorIs(t, err, redisync.ErrInvalidLease, kind)
		assert.Contains(t, err.Error(), kind+` "`+name+`": lease 1ms`, "%s: ErrInvalidLease names the primitive, the lock and the lease", kind)
	}
}

// Every WithLease doc states the minimum in the words of MinLease's value,
// so a change of the number cannot leave a doc behind.
func TestWithLeaseDocsStateMinLease(t *testing.T) {
	want := fmt.Sprintf("Below redisync.MinLease (%d ms)", redisync.MinLease.Milliseconds())
	for _, pkg := range []string{"rlock", "fairlock", "rwlock", "semaphore", "redlock"} {
		b, err := os.ReadFile(filepath.Join(pkg, "options.go"))
		require.NoError(t, err)
		doc := strings.Join(strings.Fields(strings.ReplaceAll(string(b), "//", "")), " ")
		i := strings.Index(doc, "func WithLease(")
		require.Positive(t, i, pkg)
		start := strings.LastIndex(doc[:i], "WithLease gives")
		require.GreaterOrEqual(t, start, 0, pkg)
		assert.Contains(t, doc[start:i], want, "%s.WithLease's doc", pkg)
	}
}

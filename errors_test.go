package redisync_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Issue 15, point 7: every error a user sees is one line, and says which
// primitive, which name (and key) and which numbers it is about.

func oneLine(t *testing.T, err error, contains ...string) {
	t.Helper()
	require.Error(t, err)
	msg := err.Error()
	assert.NotContains(t, msg, "\n", "one line")
	for _, c := range contains {
		assert.Contains(t, msg, c)
	}
}

func TestErrTooManyIsOneLineWithTheNumbersAndTheName(t *testing.T) {
	env := locktest.Setup(t)
	_, err := semaphore.New(env.C, "pool", 2).Acquire(context.Background(), 3)
	assert.ErrorIs(t, err, semaphore.ErrTooMany)
	oneLine(t, err, `semaphore "pool"`, "3 permits requested", "capacity is 2")
}

func TestAWrongTypeKeyNamesThePrimitiveTheNameAndTheKey(t *testing.T) {
	env := locktest.Setup(t)
	ctx := context.Background()
	env.Do(t, "SET", "str", "user data")
	check := func(err error, prim string) {
		t.Helper()
		assert.ErrorIs(t, err, redisync.ErrWrongKind)
		var wk *redisync.WrongKindError
		if assert.ErrorAs(t, err, &wk) {
			assert.Equal(t, "str", wk.Key)
		}
		oneLine(t, err, prim+` "str"`, `key "str"`)
		assert.NotContains(t, err.Error(), "WRONGTYPE")
		assert.NotContains(t, err.Error(), "script:")
	}
	check(rlock.New(env.C, "str").Lock(ctx), "rlock")
	_, err := fairlock.New(env.C, "str").TryLock(ctx)
	check(err, "fairlock")
	check(rwlock.New(env.C, "str").RLock(ctx), "rwlock")
	_, err = semaphore.New(env.C, "str", 2).Acquire(ctx, 1)
	check(err, "semaphore")
	v, err := env.Do(t, "GET", "str").ToString()
	require.NoError(t, err)
	assert.Equal(t, "user data", v, "nothing written")
}

func TestATransportErrorSaysWhatWasBeingDone(t *testing.T) {
	env := locktest.Setup(t)
	mu := rlock.New(env.C, "wj")
	env.Srv.Kill()
	_, err := mu.TryLock(context.Background())
	oneLine(t, err, `rlock "wj": trying to take the lock: `)
	// The cause is still reachable: EOF on the connection the server had,
	// or a refused or reset one.
	var ne net.Error
	assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.As(err, &ne), "%v", err)
}

func TestARedisErrorDuringAWaitSaysItWasWaiting(t *testing.T) {
	env := locktest.Setup(t)
	ctx := context.Background()
	// The waiter logs in as a user whose scripts are refused mid-wait: its
	// next attempt gets a NOPERM reply, which is not transient.
	env.Do(t, "ACL", "SETUSER", "waiter", "on", ">pw", "~*", "&*", "+@all")
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{env.Srv.Addr()}, Username: "waiter", Password: "pw", DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	wc := redisync.New(rc)
	t.Cleanup(func() { wc.Close() })

	holder := rlock.New(env.C, "wj")
	require.NoError(t, holder.Lock(ctx))
	got := make(chan error, 1)
	go func() { got <- rlock.New(wc, "wj").Lock(ctx) }()
	env.WaitSubscribed(t, "redisson_lock__channel:{wj}")
	env.Do(t, "ACL", "SETUSER", "waiter", "-evalsha", "-eval")
	require.NoError(t, holder.Unlock(ctx)) // wakes the waiter
	select {
	case err := <-got:
		oneLine(t, err, `rlock "wj": waiting for the lock: `, "NOPERM")
		_, isRedis := rueidis.IsRedisErr(errors.Unwrap(err))
		assert.True(t, isRedis, "the Redis error is still reachable: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not return")
	}
}

func TestARedlockReleaseFailureSaysReleaseAndNamesTheLock(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	var clients []*redisync.Client
	for _, s := range srvs {
		c := redisync.New(s.Client(t))
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	ctx := context.Background()
	mu := redlock.New(clients, "orders", redlock.WithLease(5*time.Second))
	require.NoError(t, mu.Lock(ctx))
	for _, s := range srvs {
		s.Kill()
	}
	err := mu.Unlock(ctx)
	var q *redlock.QuorumError
	require.ErrorAs(t, err, &q)
	assert.Equal(t, redlock.OpRelease, q.Op)
	oneLine(t, err, `redlock "orders": release confirmed by 0 of 3 nodes`)
	assert.NotContains(t, err.Error(), "granted")

	_, err = redlock.New(clients, "orders").TryLock(ctx)
	require.ErrorAs(t, err, &q)
	oneLine(t, err, `redlock "orders": acquire granted by 0 of 3 nodes, 2 required`, "node 0: ")
}

func TestAHoldEndedByCloseReportsOneLine(t *testing.T) {
	env := locktest.Setup(t)
	c := env.Client(t)
	mu := rlock.New(c, "closing")
	require.NoError(t, mu.Lock(context.Background()))
	c.Close()
	err := mu.Err()
	assert.ErrorIs(t, err, redisync.ErrLockLost)
	assert.ErrorIs(t, err, redisync.ErrClosed)
	oneLine(t, err, "lock lost", "client closed")
	assert.False(t, strings.Contains(err.Error(), "\n"))
}

func TestASemaphoreOnAWrongTypeKeyNamesItselfWhenRead(t *testing.T) {
	env := locktest.Setup(t)
	ctx := context.Background()
	env.Do(t, "SET", "str", "user data")
	s := semaphore.New(env.C, "str", 2)
	_, err := s.Available(ctx)
	assert.ErrorIs(t, err, redisync.ErrWrongKind)
	oneLine(t, err, `semaphore "str": reading the state: `, `key "str"`)
	err = s.SetPermits(ctx, 3)
	assert.ErrorIs(t, err, redisync.ErrWrongKind)
	oneLine(t, err, `semaphore "str": setting the capacity: `)
}

func TestErrUpgradeNamesTheLock(t *testing.T) {
	env := locktest.Setup(t)
	ctx := context.Background()
	rw := rwlock.New(env.C, "catalog", rwlock.WithReentrant())
	require.NoError(t, rw.RLock(ctx))
	err := rw.Lock(ctx)
	assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	oneLine(t, err, `rwlock "catalog": `)
	require.NoError(t, rw.RUnlock(ctx))
}

package rlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/scripts"
)

func TestKilledPubSubConnectionCostsAtMostOnePoll(t *testing.T) {
	const poll = 300 * time.Millisecond
	for _, silent := range []bool{false, true} {
		t.Run(map[bool]string{false: "unlock", true: "release without message"}[silent], func(t *testing.T) {
			e := setup(t)
			const name = "mutex:pubsub-killed"
			holder := New(e.C, name)
			require.NoError(t, holder.Lock(bg()))
			waiter := New(e.Client(t, redisync.WithMaxPoll(poll)), name)
			got := make(chan time.Time, 1)
			go func() {
				defer close(got)
				if err := waiter.Lock(bg()); err == nil {
					got <- time.Now()
				}
			}()
			e.WaitSubscribed(t, "redisson_lock__channel:{"+name+"}")
			e.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
			released := time.Now()
			if silent {
				e.Do(t, "DEL", name) // no PUBLISH: only polling can notice
			} else {
				require.NoError(t, holder.Unlock(bg()))
			}
			at, ok := <-got
			require.True(t, ok, "waiter failed")
			t.Logf("acquired %v after release", at.Sub(released))
			assert.Less(t, at.Sub(released), poll+200*time.Millisecond)
			require.NoError(t, waiter.Unlock(bg()))
		})
	}
}

func TestCancelledLocksLeaveNothingBehind(t *testing.T) {
	e := setup(t, redisync.WithMaxPoll(20*time.Millisecond))
	const name = "mutex:cancel"
	const calls = 1000
	var wg sync.WaitGroup
	var bad sync.Map
	stop := make(chan struct{})
	// A holder keeps the lock busy part of the time, so cancellations land
	// both in attempts and in waits.
	wg.Add(1)
	go func() {
		defer wg.Done()
		h := New(e.C, name)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if ok, _ := h.TryLock(bg()); ok {
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
				_ = h.Unlock(bg())
			}
		}
	}()
	var next sync.Mutex
	issued := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				if issued == calls {
					next.Unlock()
					return
				}
				issued++
				i := issued
				next.Unlock()
				m := New(e.C, name)
				var ctx context.Context
				var cancel context.CancelFunc
				if i%2 == 0 {
					ctx, cancel = context.WithTimeout(bg(), time.Duration(rand.IntN(3000))*time.Microsecond)
				} else {
					ctx, cancel = context.WithCancel(bg())
					timer := time.AfterFunc(time.Duration(rand.IntN(3000))*time.Microsecond, cancel)
					defer timer.Stop()
				}
				err := m.Lock(ctx)
				cancel()
				switch {
				case err == nil:
					if uerr := m.Unlock(bg()); uerr != nil {
						bad.Store(i, fmt.Errorf("unlock after Lock: %w", uerr))
					}
				case err == context.Canceled || err == context.DeadlineExceeded:
					if m.Token() != 0 || !errors.Is(m.Err(), redisync.ErrNotHeld) {
						bad.Store(i, "cancelled Lock left a hold on the handle")
					}
				default:
					bad.Store(i, fmt.Errorf("Lock: %#v", err)) // wrapped or unexpected
				}
			}
		}()
	}
	for {
		next.Lock()
		n := issued
		next.Unlock()
		if n == calls {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	bad.Range(func(k, v any) bool { t.Errorf("call %v: %v", k, v); return true })
	assert.Zero(t, eng(e.C).Watchdog.Len(), "no renewal left")
	eventually(t, 2*time.Second, func() bool { return eng(e.C).Hub.Channels() == 0 }, "no subscription left")
	// Every Lock has returned, but a cancelled Lock's acquire may still be
	// in flight: it lands, and a Client task undoes it once the reply is
	// in. Polling for an empty keyspace raced with those (beside a second
	// make test the keyspace was empty, then held a late grant, then was
	// empty again); Close waits for the Client's tasks, so after it nothing
	// of this Client writes, and a key left now is a leak.
	require.NoError(t, e.C.Close())
	if e.DBSize(t) != 0 {
		t.Error("keys left in Redis")
		ks, _ := e.Do(t, "KEYS", "*").AsStrSlice()
		t.Logf("keys: %v", ks)
		fields, _ := e.Do(t, "HGETALL", name).AsStrMap()
		t.Logf("hash: %v pttl %d", fields, e.PTTL(t, name))
	}
}

func TestFencingTokensRiseAcrossExpiryRestartAndScriptFlush(t *testing.T) {
	e := setup(t)
	const name = "mutex:fence"
	m := New(e.C, name, WithLease(50*time.Millisecond))
	var last uint64
	grant := func(why string) {
		t.Helper()
		var err error
		eventually(t, 5*time.Second, func() bool {
			var ok bool
			ok, err = m.TryLock(bg())
			return err == nil && ok
		}, why+": acquire")
		tok := m.Token()
		require.Greater(t, tok, last, why)
		last = tok
	}
	// A connection the restart broke fails its next command (EOF), and
	// Unlock may be called again after such an error: retry those only.
	unlock := func(msg string) {
		t.Helper()
		var err error
		for range 5 {
			if err = m.Unlock(bg()); err == nil || errors.Is(err, redisync.ErrNotHeld) || errors.Is(err, redisync.ErrLockLost) {
				break
			}
		}
		require.NoError(t, err, msg)
	}
	grant("first")
	unlock("first")
	grant("after release")
	// Let the fixed lease run out on the server.
	eventually(t, 2*time.Second, func() bool { return !e.Exists(t, name) }, "lease expiry")
	// The expired hold is still this handle's until Unlock, as with
	// sync.Mutex: Unlock reports the loss and lets the next Lock in.
	require.ErrorIs(t, m.Unlock(bg()), redisync.ErrLockLost)
	grant("after expiry")
	unlock("after expiry")

	e.Srv.Restart() // no persistence: every key and the script cache are gone
	grant("after restart")
	unlock("after restart")

	raw := e.Srv.Client(t) // the env's own connections may predate the restart
	redistest.Do(t, raw, "SCRIPT", "FLUSH")
	grant("after SCRIPT FLUSH")
	redistest.Do(t, raw, "SCRIPT", "FLUSH")
	unlock("NOSCRIPT must not read as not held")
	n, err := redistest.Do(t, raw, "EXISTS", name).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestRenewalSurvivesScriptFlush(t *testing.T) {
	// A 1 s lease (renewed every 333 ms), watched for two: the hold is
	// alive at the end only if renewals after the flush loaded the script
	// again. With 300 ms the hold was lost once beside a second make test
	// (a stall of the process of 200 ms, two thirds of that lease, is
	// enough; a loaded machine stalls a process 200-300 ms, see
	// internal/lockopt's MinWaiterTimeout); 1 s survives one of about
	// 650 ms.
	const lease = time.Second
	e := setup(t, redisync.WithWatchdogTimeout(lease))
	m := New(e.C, "mutex:flush")
	require.NoError(t, m.Lock(bg()))
	e.Do(t, "SCRIPT", "FLUSH")
	time.Sleep(2 * lease) // the first renewal after the flush finds NOSCRIPT
	require.NoError(t, m.Err())
	require.True(t, e.Exists(t, "mutex:flush"))
	require.NoError(t, m.Unlock(bg()))
}

func TestRetriedUnlockNeverReleasesTwice(t *testing.T) {
	e := setup(t)
	const name = "mutex:retry"
	m := New(e.C, name, WithReentrant())
	require.NoError(t, m.Lock(bg()))
	require.NoError(t, m.Lock(bg()))
	// The first release ran but its reply was "lost": replay it as Unlock would.
	r, err := scripts.LockRelease(bg(), e.RC, &m.keys, m.owner, m.leaseMs, 2, "publish")
	require.NoError(t, err)
	require.True(t, r.Acted)
	require.NoError(t, m.Unlock(bg()), "the retried release finds the count already at 1")
	n, _ := m.HoldCount(bg())
	assert.Equal(t, 1, n, "a retried release must not decrement twice")
	assert.NoError(t, m.Err())
	require.NoError(t, m.Unlock(bg()))
	assert.False(t, e.Exists(t, name))
}

func TestFixedLeaseInnerHoldNeverCancelsTheOuterWatchdogHold(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(600*time.Millisecond))
	const name = "mutex:mixed"
	outer := New(e.C, name)
	require.NoError(t, outer.Lock(bg()))
	inner := New(e.C, name, WithOwner(outer.Owner()), WithLease(50*time.Millisecond))
	require.NoError(t, inner.Lock(bg()))
	assert.Greater(t, e.PTTL(t, name), int64(100), "re-entering with a short lease must not shorten the lease")
	require.NoError(t, inner.Unlock(bg()))
	time.Sleep(1500 * time.Millisecond) // several leases
	require.NoError(t, outer.Err(), "outer hold lost after the inner fixed-lease hold")
	require.True(t, e.Exists(t, name))
	n, _ := outer.HoldCount(bg())
	assert.Equal(t, 1, n)
	require.NoError(t, outer.Unlock(bg()))
}

// redissonAcquire plays Redisson's RLock acquire: free or mine → HINCRBY and
// PEXPIRE on the raw name; otherwise the PTTL.
const redissonAcquire = `if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end;
return redis.call('pttl', KEYS[1]);`

func TestRedissonAndRedisyncExcludeAndWakeEachOther(t *testing.T) {
	e := setup(t, redisync.WithMaxPoll(30*time.Second))
	const name = "mutex:interop"
	const channel = "redisson_lock__channel:{" + name + "}"
	const javaOwner = "9a3c1f0e-1d2b-4c5d-8e7f-0a1b2c3d4e5f:1"
	redisson := func() bool {
		t.Helper()
		res := e.Do(t, "EVAL", redissonAcquire, "1", name, "30000", javaOwner)
		return rueidisNil(res.Error())
	}

	// Redisson holds: redisync is refused, waits, and wakes on Redisson's release.
	require.True(t, redisson())
	m := New(e.C, name)
	ok, err := m.TryLock(bg())
	require.NoError(t, err)
	require.False(t, ok)
	got := make(chan error, 1)
	go func() { got <- m.Lock(bg()) }()
	e.WaitSubscribed(t, channel)
	e.Do(t, "DEL", name)
	e.Do(t, "PUBLISH", channel, "0")
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("redisync waiter not woken by Redisson's release")
	}
	fields, _ := e.Do(t, "HGETALL", name).AsStrMap()
	assert.Equal(t, "1", fields[m.Owner()], "Redisson layout: field <owner> = hold count")
	assert.True(t, strings.HasPrefix(m.Owner(), e.C.ID()+":"))

	// redisync holds: Redisson is refused, and its waiter hears redisync's release.
	require.False(t, redisson())
	msgs := e.Subscribe(t, channel, false)
	require.NoError(t, m.Unlock(bg()))
	select {
	case msg := <-msgs:
		assert.Equal(t, "0", msg)
	case <-time.After(5 * time.Second):
		t.Fatal("Redisson waiter not woken by redisync's release")
	}
	require.True(t, redisson())
	e.Do(t, "DEL", name)
}

func TestBadInputIsRejectedWithoutTouchingRedis(t *testing.T) {
	e := setup(t)
	for _, name := range []string{"", strings.Repeat("x", 64<<10)} {
		m := New(e.C, name) // names are data: an error, not a panic
		assert.ErrorIs(t, m.Lock(bg()), redisync.ErrInvalidName)
		ok, err := m.TryLock(bg())
		assert.False(t, ok)
		assert.ErrorIs(t, err, redisync.ErrInvalidName)
		assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrInvalidName)
	}
	assert.Panics(t, func() { New(nil, "x") })
	for _, d := range []time.Duration{0, -time.Second, time.Microsecond, redisync.MinLease - 1} {
		assert.ErrorIs(t, New(e.C, "x", WithLease(d)).Lock(bg()), redisync.ErrInvalidLease, "lease %v", d)
	}
	assert.ErrorIs(t, New(e.C, "x", WithOwner("")).Lock(bg()), redisync.ErrInvalidOwner) // owner ids are data too
	assert.Panics(t, func() { redisync.New(e.RC, redisync.WithWatchdogTimeout(0)) })
	assert.Panics(t, func() { redisync.New(e.RC, redisync.WithWatchdogTimeout(-time.Second)) })
	assert.Panics(t, func() { redisync.New(e.RC, redisync.WithMaxPoll(0)) })
	assert.Panics(t, func() { redisync.New(nil) })
	m := New(e.C, "x")
	//lint:ignore SA1012 testing the documented panic
	assert.PanicsWithValue(t, "rlock: nil Context", func() { _ = m.Lock(nil) }) //nolint:staticcheck
	assert.Zero(t, e.DBSize(t), "rejected input left state in Redis")

	// Names with braces work on a single server; their derived keys keep the slot.
	for _, name := range []string{"a{b", "{}", "{x}y", "}{", strings.Repeat("n", MaxNameLength)} {
		m := New(e.C, name)
		require.NoError(t, m.Lock(bg()), name)
		assert.True(t, e.Exists(t, name), name)
		require.NoError(t, m.Unlock(bg()), name)
	}
	assert.Zero(t, e.DBSize(t))

	// A cancelled context is refused before any I/O.
	ctx, cancel := context.WithCancel(bg())
	cancel()
	assert.Equal(t, context.Canceled, m.Lock(ctx))
}

func TestUseAfterCloseReturnsErrClosed(t *testing.T) {
	e := setup(t)
	c := e.Client(t)
	m := New(c, "mutex:closed-client")
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	assert.ErrorIs(t, m.Lock(bg()), redisync.ErrClosed)
	_, err := m.TryLock(bg())
	assert.ErrorIs(t, err, redisync.ErrClosed)
	assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrClosed)
	_, err = m.HoldCount(bg())
	assert.ErrorIs(t, err, redisync.ErrClosed)
	_, err = New(c, "mutex:closed-client").ForceUnlock(bg())
	assert.ErrorIs(t, err, redisync.ErrClosed)
	assert.Zero(t, e.DBSize(t))
}

func TestCloseWakesBlockedWaitersWithErrClosed(t *testing.T) {
	e := setup(t, redisync.WithMaxPoll(30*time.Second))
	holder := New(e.C, "mutex:close-wait")
	require.NoError(t, holder.Lock(bg()))
	c := e.Client(t, redisync.WithMaxPoll(30*time.Second))
	waiter := New(c, "mutex:close-wait")
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(bg()) }()
	e.WaitSubscribed(t, "redisson_lock__channel:{mutex:close-wait}")
	require.NoError(t, c.Close())
	select {
	case err := <-got:
		assert.ErrorIs(t, err, redisync.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("waiter still blocked after Close")
	}
	require.NoError(t, holder.Unlock(bg()))
}

func TestForceUnlockFreesTheLockAndTellsTheHolder(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(600*time.Millisecond))
	m := New(e.C, "mutex:force")
	require.NoError(t, m.Lock(bg()))
	ok, err := New(e.C, "mutex:force").ForceUnlock(bg())
	require.NoError(t, err)
	assert.True(t, ok)
	assert.False(t, e.Exists(t, "mutex:force"))
	select {
	case <-m.Done():
	case <-time.After(time.Second):
		t.Fatal("holder not told")
	}
	assert.ErrorIs(t, m.Err(), redisync.ErrLockLost)
	ok, err = New(e.C, "mutex:force").ForceUnlock(bg())
	require.NoError(t, err)
	assert.False(t, ok)
	e.Do(t, "SET", "not-a-lock", "v")
	_, err = New(e.C, "not-a-lock").ForceUnlock(bg())
	assert.Error(t, err)
	assert.True(t, e.Exists(t, "not-a-lock"))
}

func TestTTLReportsTheRemainingLease(t *testing.T) {
	e := setup(t)
	m := New(e.C, "mutex:ttl", WithLease(10*time.Second))
	d, err := m.TTL(bg())
	require.NoError(t, err)
	assert.Zero(t, d)
	require.NoError(t, m.Lock(bg()))
	d, err = m.TTL(bg())
	require.NoError(t, err)
	assert.InDelta(t, float64(10*time.Second), float64(d), float64(time.Second))
	require.NoError(t, m.Unlock(bg()))
}

func TestSubscriptionLingersForAReturningWaiter(t *testing.T) {
	e := setup(t)
	const name = "mutex:linger"
	holder, waiter := New(e.C, name), New(e.C, name)
	wait := func() {
		t.Helper()
		require.NoError(t, holder.Lock(bg()))
		got := make(chan error, 1)
		go func() { got <- waiter.Lock(bg()) }()
		e.WaitSubscribed(t, "redisson_lock__channel:{"+name+"}")
		require.NoError(t, holder.Unlock(bg()))
		require.NoError(t, <-got)
		require.NoError(t, waiter.Unlock(bg()))
	}
	wait()
	subscribes := redistest.CommandCalls(t, e.RC, "subscribe")
	wait() // within wakeup.Linger: the same subscription serves
	assert.Equal(t, subscribes, redistest.CommandCalls(t, e.RC, "subscribe"), "a returning waiter subscribed again")
	// After the linger, the subscription is dropped.
	eventually(t, 3*time.Second, func() bool { return eng(e.C).Hub.Channels() == 0 }, "lingering subscription dropped")
}

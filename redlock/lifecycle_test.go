package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
)

// blockingObserver parks the first Lost event about one of names until
// release is closed, and says which name it parked.
type blockingObserver struct {
	names   map[string]bool
	first   atomic.Bool
	parked  chan string
	release chan struct{}
}

func (o *blockingObserver) Observe(ev redisync.Event) {
	if ev.Kind != redisync.EventLost || !o.names[ev.Name] {
		return
	}
	if o.first.CompareAndSwap(false, true) {
		o.parked <- ev.Name
		<-o.release
	}
}

// Defect 1 of issue 12: when the watchdog had already dropped the hold
// (its OnLost not run yet), Unlock called itself while holding its own
// operation lock and hung, and so did every later call on the handle.
// Closing the Client drops every hold at once and then calls OnLost one by
// one; an observer parked in the first OnLost keeps the other hold in the
// window, deterministically.
func TestUnlockOfAHoldTheWatchdogAlreadyDroppedReturns(t *testing.T) {
	ms := startMasters(t, 3)
	o := &blockingObserver{names: map[string]bool{"dropped-a": true, "dropped-b": true},
		parked: make(chan string, 1), release: make(chan struct{})}
	clients := ms.newClients(t)
	first := redisync.New(ms.srv[0].Client(t), redisync.WithObserver(o))
	t.Cleanup(func() { first.Close() })
	clients[0] = first
	a, b := New(clients, "dropped-a"), New(clients, "dropped-b")
	require.NoError(t, a.Lock(bg()))
	require.NoError(t, b.Lock(bg()))

	closed := make(chan struct{})
	go func() {
		defer close(closed)
		first.Close()
	}()
	var parked string
	select {
	case parked = <-o.parked:
	case <-time.After(10 * time.Second):
		close(o.release)
		t.Fatal("Close reported no loss")
	}
	other := b
	if parked == "dropped-b" {
		other = a
	}
	unlocked := make(chan error, 1)
	go func() { unlocked <- other.Unlock(bg()) }()
	select {
	case err := <-unlocked:
		close(o.release)
		assert.ErrorIs(t, err, redisync.ErrLockLost)
	case <-time.After(10 * time.Second):
		close(o.release)
		t.Fatal("Unlock of a hold the watchdog dropped hangs")
	}
	<-closed
	done := make(chan error, 1)
	go func() { done <- other.Unlock(bg()) }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, redisync.ErrNotHeld)
	case <-time.After(10 * time.Second):
		t.Fatal("the handle hangs after the first Unlock")
	}
	assert.Zero(t, ms.held(t, other.Name()), "the lost hold's keys were removed")
	// The parked one: its loss is reported and its keys removed too.
	mine := a
	if other == a {
		mine = b
	}
	assert.ErrorIs(t, mine.Unlock(bg()), redisync.ErrLockLost)
	assert.Zero(t, ms.held(t, mine.Name()))
}

// Defect 8 of issue 12, as a stress: a Lock whose ctx ended during phase 1
// gave up on the acquires in flight and sent the undo at once, on other
// connections: an acquire that ran after its undo left the key held for the
// whole lease with no one to renew or release it. Every acquire's reply
// must decide its undo. (On this machine the reordering is rare enough that
// this passes on the old code too; TestCancelledLockIsNotUndoneBeforeItsAcquireRuns
// below forces it.)
func TestCancelledLocksLeaveNoOrphans(t *testing.T) {
	ms := startMasters(t, 3)
	const (
		lease      = 10 * time.Second
		goroutines = 32
		rounds     = 40
		processes  = 4
	)
	names := []string{"orphan-0", "orphan-1", "orphan-2", "orphan-3"}
	var sets [][]*redisync.Client
	for range processes {
		sets = append(sets, ms.newClients(t))
	}
	var (
		wg      sync.WaitGroup
		granted sync.Map
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := New(sets[g%processes], names[g%len(names)], WithLease(lease), WithRetryDelay(time.Millisecond, 3*time.Millisecond))
			for range rounds {
				ctx, cancel := context.WithTimeout(bg(), time.Duration(rand.N(3001))*time.Microsecond)
				err := m.Lock(ctx)
				cancel()
				if err == nil {
					granted.Store(g, true)
					if err := m.Unlock(bg()); err != nil {
						t.Errorf("unlock: %v", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	start := time.Now()
	for _, set := range sets {
		for _, c := range set {
			c.Close() // waits for the Clients' tasks (the undos)
		}
	}
	var left []string
	for _, name := range names {
		if n := ms.held(t, name); n > 0 {
			left = append(left, fmt.Sprintf("%s on %d nodes", name, n))
		}
	}
	assert.Empty(t, left, "orphans %v after every handle unlocked and the Clients closed", left)
	assert.Less(t, time.Since(start), lease/2, "closing took most of a lease")
}

// Defect 10 of issue 12 (redlock): a node that did not answer within the
// node timeout showed up as context.DeadlineExceeded, as if the caller's
// ctx had ended.
func TestLiveCtxNeverSeesDeadlineExceeded(t *testing.T) {
	ms := startMasters(t, 5)
	m := New(ms.clients, "live-ctx", WithLease(5*time.Second))
	for _, i := range []int{0, 2, 4} {
		ms.srv[i].Pause()
	}
	ok, err := m.TryLock(bg())
	for _, i := range []int{0, 2, 4} {
		ms.srv[i].Resume()
	}
	assert.False(t, ok)
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "the caller's ctx is alive: %v", err)
	locktest.Eventually(t, 3*time.Second, func() bool { return ms.held(t, "live-ctx") == 0 }, "late grants released")
}

// Unlock's errors are about the release: "nodes granted" and a context
// error the caller never set described a failed release as a failed
// acquisition.
func TestFailedReleaseIsReportedAsARelease(t *testing.T) {
	ms := startMasters(t, 3)
	m := New(ms.clients, "release-err", WithLease(5*time.Second))
	require.NoError(t, m.Lock(bg()))
	for _, s := range ms.srv {
		s.Pause()
	}
	err := m.Unlock(bg())
	for _, s := range ms.srv {
		s.Resume()
	}
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	assert.Contains(t, err.Error(), "release")
	assert.False(t, strings.Contains(err.Error(), "granted"), "%v", err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "the caller's ctx is alive: %v", err)
	assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld, "the hold ended locally")
	select {
	case <-m.Done():
	default:
		t.Fatal("Done open after Unlock")
	}
	// The release was not abandoned: it runs when the nodes answer.
	locktest.Eventually(t, 3*time.Second, func() bool { return ms.held(t, "release-err") == 0 }, "released on resume")
}

// Unlock with a ctx that has already ended still releases: ctx bounds only
// how long Unlock waits for the replies.
func TestUnlockWithEndedCtxReleases(t *testing.T) {
	ms := startMasters(t, 3, redisync.WithWatchdogTimeout(10*time.Second))
	m := New(ms.clients, "ended-ctx")
	ctx, cancel := context.WithCancel(bg())
	require.NoError(t, m.Lock(ctx))
	cancel()
	err := m.Unlock(ctx)
	if err != nil {
		assert.ErrorIs(t, err, context.Canceled)
	}
	assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld)
	locktest.Eventually(t, 3*time.Second, func() bool { return ms.held(t, "ended-ctx") == 0 }, "released")
	require.NoError(t, m.Lock(bg()), "the handle is usable again")
	require.NoError(t, m.Unlock(bg()))
}

// Defect 9 of issue 12 (redlock): a grant whose validity is spent by the
// time the replies are read is never reported; Lock keeps trying until
// ctx ends, and leaves nothing behind.
func TestLockNeverReportsASpentGrant(t *testing.T) {
	ms := startMasters(t, 3)
	const lease = 200 * time.Millisecond
	m := New(ms.clients, "spent", WithLease(lease), WithNodeTimeout(100*time.Millisecond))
	m.PauseAfterReplies(lease + 50*time.Millisecond)
	ctx, cancel := context.WithTimeout(bg(), time.Second)
	defer cancel()
	err := m.Lock(ctx)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	var qe *QuorumError
	if errors.As(err, &qe) {
		assert.LessOrEqual(t, qe.Validity, time.Duration(0))
	}
	assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld)
	assert.Zero(t, m.Token())
	locktest.Eventually(t, 3*time.Second, func() bool { return ms.held(t, "spent") == 0 }, "spent grants released")
}

// Defect 8 of issue 12, made deterministic: each node's acquire travels on
// a slow connection and lands after the Lock's ctx has ended. rueidis gives
// up on a command whose deadline passes by closing its connection, so an
// undo sent at once goes out on a new, fast connection, runs first, finds
// nothing, and the acquire then takes the key for the whole lease. The undo
// must wait for the acquire's reply.
func TestCancelledLockIsNotUndoneBeforeItsAcquireRuns(t *testing.T) {
	const (
		delay = 150 * time.Millisecond
		lease = 10 * time.Second
	)
	srv := redistest.StartN(t, 3)
	var clients []*redisync.Client
	var proxies []*delayProxy
	for _, s := range srv {
		p := newDelayProxy(t, s.Addr(), delay)
		p.slow.Store(true)
		proxies = append(proxies, p)
		c := redisync.New(p.client(t))
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	m := New(clients, "reordered", WithLease(lease), WithNodeTimeout(2*time.Second))
	// Warm up the slow connections (and the script caches). Only contexts
	// with a deadline: rueidis then sends on the caller's goroutine, and
	// closes the connection when the deadline passes.
	warm, cancel := context.WithTimeout(bg(), 10*time.Second)
	ok, err := m.TryLock(warm)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, m.Unlock(warm))
	cancel()
	for _, p := range proxies {
		p.slow.Store(false) // connections opened from now on are fast
	}

	ctx, cancel := context.WithTimeout(bg(), delay/3)
	err = m.Lock(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	time.Sleep(3 * delay) // the acquires have landed
	for _, c := range clients {
		c.Close() // waits for the Clients' tasks (the undos)
	}
	left := 0
	for _, s := range srv {
		n, _ := redistest.Do(t, s.Client(t), "EXISTS", "reordered").AsInt64()
		left += int(n)
	}
	assert.Zero(t, left, "orphaned on %d nodes: the undo ran before the acquire", left)
}

// Defect 10 of issue 12 (redlock): transport errors while a Lock waits —
// connections refused, then reset by a restart — are retried within ctx
// rather than ending the Lock.
func TestLockRetriesTransientNodeErrorsWithinCtx(t *testing.T) {
	ms := startMasters(t, 3)
	m := New(ms.clients, "transient", WithLease(5*time.Second), WithRestartQuarantine(0))
	ms.srv[0].Kill()
	ms.srv[1].Kill()
	locked := make(chan error, 1)
	ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
	defer cancel()
	go func() { locked <- m.Lock(ctx) }()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-locked:
		t.Fatalf("Lock returned %v while a quorum was down", err)
	default:
	}
	ms.srv[0].Restart()
	ms.srv[1].Restart()
	require.NoError(t, <-locked)
	require.NoError(t, m.Err())
	require.NoError(t, m.Unlock(bg()))
	assert.Zero(t, ms.held(t, "transient"))
}

package rlock

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// stacks returns the stacks of every goroutine.
func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// clientTasks counts the Client's tasks still running once the ones about
// to exit have: it counts again for up to 200 ms while any are left. A
// task that has counted itself out may not have run to its end yet on a
// loaded machine; one still waiting stays for seconds.
func clientTasks() int {
	deadline := time.Now().Add(200 * time.Millisecond)
	for {
		n := clientTasksNow()
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func clientTasksNow() int {
	n := 0
	for _, g := range strings.Split(stacks(), "\n\n") {
		if strings.Contains(g, "redisync/internal/engine.(*Engine).Go.func1") || strings.Contains(g, "redisync/internal/engine.run1[") {
			n++
		}
	}
	return n
}

// Unlock(context.Background()) of a held lock while the server is
// stopped: Close waits for that release as for any other, for at most
// CloseTimeout, then gives it up. Unlock returns then, with an error
// matching ErrClosed. Before, nothing reached it: it returned 9.8 s after
// Close, with rueidis's i/o timeout.
func TestUnlockWithBackgroundCtxReturnsErrClosedWhenCloseGivesItUp(t *testing.T) {
	srv := redistest.Start(t)
	c := redisync.New(srv.OneConnClient(t)) // see redistest.OneConnClient
	t.Cleanup(func() { c.Close() })
	m := New(c, "close:bgunlock")
	require.NoError(t, m.Lock(bg()))
	srv.Pause()
	defer srv.Resume()
	got := make(chan error, 1)
	go func() { got <- m.Unlock(context.Background()) }()
	time.Sleep(200 * time.Millisecond) // the release is on its way
	start := time.Now()
	c.Close()
	assert.Less(t, time.Since(start), redisync.CloseTimeout+500*time.Millisecond, "Close outlived its bound")
	select {
	case err := <-got:
		assert.ErrorIs(t, err, redisync.ErrClosed)
		assert.NotErrorIs(t, err, context.Canceled, "the caller's ctx cannot end")
	case <-time.After(time.Second):
		t.Errorf("Unlock(context.Background()) still blocked %v after Close began", time.Since(start))
		srv.Resume()
		<-got
	}
}

// A reentrant handle's nested Lock(context.Background()) is in flight on a
// stopped server (its attempt holds the handle's op); an Unlock with a
// short ctx hands its release to a Client task that waits for the op.
// Close gives both up within its bound: the nested Lock returns ErrClosed
// and no task is left when Close returns. Before, the nested Lock was
// still blocked 4 s after Close, and the release task with it.
//
// The Client has one connection, open before the server stops (see
// redistest.OneConnClient): a handshake is out of Close's reach (see
// engine.abandonGrace), and not the nested Lock in flight this test is
// about.
func TestCloseGivesUpANestedLockInFlightAndTheReleaseQueuedBehindIt(t *testing.T) {
	srv := redistest.Start(t)
	c := redisync.New(srv.OneConnClient(t))
	t.Cleanup(func() { c.Close() })
	m := New(c, "close:reent", WithReentrant())
	require.NoError(t, m.Lock(bg()))
	srv.Pause()
	defer srv.Resume()
	nested := make(chan error, 1)
	go func() { nested <- m.Lock(context.Background()) }()
	require.Eventually(t, func() bool {
		return strings.Contains(stacks(), "rlock.(*Mutex).acquireLatched")
	}, 10*time.Second, 10*time.Millisecond, "the nested acquire never went out")
	ctx, cancel := context.WithTimeout(bg(), 300*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, m.Unlock(ctx), context.DeadlineExceeded)
	start := time.Now()
	c.Close()
	assert.Less(t, time.Since(start), redisync.CloseTimeout+500*time.Millisecond, "Close outlived its bound")
	assert.Zero(t, clientTasks(), "Client tasks still running after Close returned")
	select {
	case err := <-nested:
		assert.ErrorIs(t, err, redisync.ErrClosed)
		assert.NotErrorIs(t, err, context.Canceled, "the caller's ctx cannot end")
	case <-time.After(time.Second):
		t.Errorf("nested Lock(context.Background()) still blocked %v after Close began", time.Since(start))
		srv.Resume()
		<-nested
	}
}

// An Unlock whose ctx never ends is waiting for a stopped server when
// Close gives its release up: Unlock's error matches ErrClosed and names
// the lock, and is not context.Canceled (the caller's ctx was never
// cancelled). Before, it was a bare "context canceled".
func TestUnlockGivenUpByCloseReturnsErrClosed(t *testing.T) {
	e := setup(t)
	const name = "close:givenup"
	m := New(e.C, name)
	require.NoError(t, m.Lock(bg()))
	e.Srv.Pause()
	defer e.Srv.Resume()
	ctx, cancel := context.WithTimeout(bg(), time.Minute)
	defer cancel()
	got := make(chan error, 1)
	go func() { got <- m.Unlock(ctx) }()
	time.Sleep(200 * time.Millisecond) // the release is on its way
	e.C.Close()
	err := <-got
	require.NoError(t, ctx.Err())
	assert.ErrorIs(t, err, redisync.ErrClosed)
	assert.NotErrorIs(t, err, context.Canceled, "the caller's ctx was never cancelled")
	assert.Contains(t, err.Error(), name, "the error names the lock")
}

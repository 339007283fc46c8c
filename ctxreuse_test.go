package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// keepingClient is a rueidis.Client that keeps the ctx of every command it
// sends (a hook that logs or traces after the reply, on a goroutine of its
// own, as rueidishook users write them): a context.Context may be kept,
// and what it says must not change under whoever keeps it.
type keepingClient struct {
	rueidis.Client
	mu   sync.Mutex
	kept []context.Context
}

func (c *keepingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.mu.Lock()
	c.kept = append(c.kept, ctx)
	c.mu.Unlock()
	return c.Client.Do(ctx, cmd)
}

func (c *keepingClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.mu.Lock()
	c.kept = append(c.kept, ctx)
	c.mu.Unlock()
	return c.Client.DoMulti(ctx, multi...)
}

func (c *keepingClient) take() []context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.kept
	c.kept = nil
	return k
}

type reuseKey struct{}

// valueOf reads key from ctx, a panic told as an error (a context whose
// caller's ctx was dropped panics in context.WithoutCancel(nil)).
func valueOf(ctx context.Context) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Value panicked: %v", r)
		}
	}()
	return ctx.Value(reuseKey{}), nil
}

// An Unlock or a Lock hands the Client's rueidis client a context with
// the caller's values: a pooled detached one (for a ctx that cannot end,
// and the engine's Settler and DetachUnwatched for one that can). A client
// or hook that keeps that context past the call (redisync.New's doc asks
// it not to) never panics reading it and races with nothing (-race): it
// sees the call's values, nil once the context is released, or a later
// call's once it serves one.
func TestAKeptCallCtxNeverPanics(t *testing.T) {
	defer func() {
		for _, cancel := range keptCancels {
			cancel()
		}
		keptCancels = nil
	}()
	for _, c := range []struct {
		name string
		lock func(context.Context) context.Context // the Lock's ctx
		free func(context.Context) context.Context // the Unlock's ctx
	}{
		{"uncancellable unlock", func(ctx context.Context) context.Context { return ctx }, context.WithoutCancel},
		{"cancellable unlock", func(ctx context.Context) context.Context { return ctx }, cancellable},
		{"cancellable lock", cancellable, context.WithoutCancel},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := redistest.Start(t)
			kc := &keepingClient{Client: srv.Client(t)}
			cl := redisync.New(kc, redisync.WithHolderInfo(false))
			defer cl.Close()
			ctxA := context.WithValue(context.Background(), reuseKey{}, "A")
			ctxB := context.WithValue(context.Background(), reuseKey{}, "B")
			// The scripts loaded first, so that the calls below run as usual.
			warm := rlock.New(cl, "reuse:warm")
			require.NoError(t, warm.Lock(ctxB))
			require.NoError(t, warm.Unlock(ctxB))

			a := rlock.New(cl, "reuse:a")
			kc.take()
			require.NoError(t, a.Lock(c.lock(ctxA)))
			require.NoError(t, a.Unlock(c.free(ctxA)))
			keptA := kc.take()
			require.NotEmpty(t, keptA, "no command sent")

			// Other calls, with other values, reuse whatever they may.
			for i := range 20 {
				b := rlock.New(cl, fmt.Sprintf("reuse:b%d", i))
				require.NoError(t, b.Lock(c.lock(ctxB)))
				require.NoError(t, b.Unlock(c.free(ctxB)))
			}
			s := semaphore.New(cl, "reuse:sem", 2)
			p, err := s.Acquire(c.lock(ctxB), 1)
			require.NoError(t, err)
			require.NoError(t, p.Release(c.free(ctxB)))

			for _, k := range keptA {
				v, err := valueOf(k)
				require.NoError(t, err, "a kept ctx of the Lock or Unlock")
				assert.Contains(t, []any{"A", "B", nil}, v, "a kept ctx of the Lock or Unlock shows a value nobody gave it")
			}
		})
	}
}

// cancellable is ctx with a cancel that nobody calls during the test.
func cancellable(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	keptCancels = append(keptCancels, cancel)
	return ctx
}

// keptCancels are cancellable's cancels, called once the test is over.
var keptCancels []context.CancelFunc

// Close while many Unlocks whose ctx cannot end wait for a stopped
// server — two at once on each rlock handle (one releases, the other is
// turned away or waits its turn) and the permits of one semaphore — gives
// them up within its bound: each returns, a release given up with an
// error matching ErrClosed, and no goroutine of the Client is left. Then,
// the server resumed, a new Client's uncancellable calls (on contexts the
// pool may hand out again) work and are not given up.
func TestCloseGivesUpManyUncancellableUnlocksOnSharedHandles(t *testing.T) {
	srv := redistest.Start(t)
	c := redisync.New(srv.Client(t))
	ctx := context.Background()
	const n = 8
	mus := make([]*rlock.Mutex, n)
	for i := range mus {
		mus[i] = rlock.New(c, fmt.Sprintf("reuse:shared%d", i))
		require.NoError(t, mus[i].Lock(ctx))
	}
	s := semaphore.New(c, "reuse:shared-sem", n)
	permits := make([]*semaphore.Permit, n)
	for i := range permits {
		p, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		permits[i] = p
	}
	srv.Pause()
	defer srv.Resume()
	errs := make(chan error, 3*n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(3)
		go func() { defer wg.Done(); errs <- mus[i].Unlock(context.WithoutCancel(ctx)) }()
		go func() { defer wg.Done(); errs <- mus[i].Unlock(ctx) }()
		go func() { defer wg.Done(); errs <- permits[i].Release(ctx) }()
	}
	time.Sleep(300 * time.Millisecond) // the releases are on their way
	start := time.Now()
	c.Close()
	took := time.Since(start)
	assert.Less(t, took, redisync.CloseTimeout+time.Second, "Close outlived its bound")
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Unlocks still wait after Close returned")
	}
	close(errs)
	closed := 0
	for err := range errs {
		switch {
		case errors.Is(err, redisync.ErrClosed):
			closed++
		case err != nil:
			assert.ErrorIs(t, err, redisync.ErrNotHeld)
		}
	}
	assert.GreaterOrEqual(t, closed, 2*n, "every release was given up")
	assert.Empty(t, ourGoroutines(), "goroutines of the Client left after Close")

	srv.Resume()
	c2 := redisync.New(srv.Client(t))
	defer c2.Close()
	for i := range 4 * n {
		m2 := rlock.New(c2, fmt.Sprintf("reuse:after%d", i))
		require.NoError(t, m2.Lock(ctx))
		require.NoError(t, m2.Unlock(context.WithoutCancel(ctx)), "a context given up by the closed Client came back")
	}
}

// Close while Acquires and Locks whose ctx cannot end wait — for a full
// semaphore, a held rlock — and the server stops: each returns, with an
// error matching ErrClosed, within Close's bound, and no goroutine of the
// Client is left.
func TestCloseEndsUncancellableWaitsOnAStoppedServer(t *testing.T) {
	srv := redistest.Start(t)
	owner := redisync.New(srv.Client(t))
	defer owner.Close()
	ctx := context.Background()
	_, err := semaphore.New(owner, "reuse:full", 1).Acquire(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, rlock.New(owner, "reuse:held").Lock(ctx))

	c := redisync.New(srv.Client(t))
	errs := make(chan error, 4)
	for range 2 {
		go func() { _, err := semaphore.New(c, "reuse:full", 1).Acquire(ctx, 1); errs <- err }()
		go func() { errs <- rlock.New(c, "reuse:held").Lock(ctx) }()
	}
	time.Sleep(300 * time.Millisecond) // all four wait
	srv.Pause()
	defer srv.Resume()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	c.Close()
	assert.Less(t, time.Since(start), redisync.CloseTimeout+time.Second, "Close outlived its bound")
	for range 4 {
		select {
		case err := <-errs:
			assert.ErrorIs(t, err, redisync.ErrClosed)
		case <-time.After(2 * time.Second):
			t.Fatal("a wait still blocks after Close returned")
		}
	}
	srv.Resume()
	owner.Close()
	assert.Empty(t, ourGoroutines(), "goroutines of the Clients left after Close")
}

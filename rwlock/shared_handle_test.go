package rwlock

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
)

// Issue 12, defect 11, for the write side: goroutines sharing one handle
// around a read-pause-write counter must not overlap.
func TestGoroutinesSharingOneHandleExcludeEachOtherWhenWriting(t *testing.T) {
	e := setup(t)
	rw := New(e.C, "rwshared:counter")
	const goroutines, each = 3, 100
	var (
		counter atomic.Int64 // atomic only so that -race reports overlaps as a wrong count
		wg      sync.WaitGroup
	)
	for range goroutines {
		wg.Go(func() {
			for range each {
				if err := rw.Lock(bg()); err != nil {
					t.Error(err)
					return
				}
				v := counter.Load()
				time.Sleep(200 * time.Microsecond)
				counter.Store(v + 1)
				if err := rw.Unlock(bg()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(goroutines*each), counter.Load(), "critical sections overlapped")
	e.WaitEmpty(t)
}

// One handle behaves like one sync.RWMutex: its goroutines read together
// (each RLock one more read hold of the handle's owner), and a Lock on it
// waits for all of them, and they for it.
func TestGoroutinesSharingOneHandleReadTogetherAndWaitForItsWriter(t *testing.T) {
	e := setup(t)
	const name = "rwshared:readers"
	rw := New(e.C, name)
	const readers = 3
	for range readers {
		ctx, cancel := context.WithTimeout(bg(), 5*time.Second)
		require.NoError(t, rw.RLock(ctx), "readers of one handle share")
		cancel()
	}
	assert.Equal(t, strconv.Itoa(readers), hash(t, e, name)[rw.Owner()], "one read hold per RLock")
	ok, err := rw.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok, "the handle's own readers keep its writer out")

	wrote := make(chan error, 1)
	go func() { wrote <- rw.Lock(bg()) }()
	for i := range readers {
		select {
		case err := <-wrote:
			t.Fatalf("the writer got in with %d readers inside (err %v)", readers-i, err)
		case <-time.After(50 * time.Millisecond):
		}
		require.NoError(t, rw.RUnlock(bg()))
	}
	select {
	case err := <-wrote:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the writer never got in after its readers left")
	}
	assert.Equal(t, "write", hash(t, e, name)["mode"])

	// While the handle writes, its readers wait, as with sync.RWMutex.
	ctx, cancel := context.WithTimeout(bg(), 200*time.Millisecond)
	defer cancel()
	assert.Equal(t, context.DeadlineExceeded, rw.RLock(ctx))
	ok, err = rw.TryRLock(bg())
	require.NoError(t, err)
	assert.False(t, ok)
	read := make(chan error, 1)
	go func() { read <- rw.RLock(bg()) }()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, rw.Unlock(bg()))
	select {
	case err := <-read:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the reader never got in after the writer left")
	}
	assert.Equal(t, "read", hash(t, e, name)["mode"])
	require.NoError(t, rw.RUnlock(bg()))
	e.WaitEmpty(t)
}

func TestRWWithReentrantAndNonReentrant(t *testing.T) {
	e := setup(t)
	const name = "rwshared:modes"
	r := New(e.C, name, WithReentrant())
	require.NoError(t, r.Lock(bg()))
	tok := r.WriteLocker().Token()
	ctx, cancel := context.WithTimeout(bg(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.Lock(ctx), "a reentrant writer nests")
	require.NoError(t, r.RLock(ctx), "and may read")
	assert.Equal(t, "2", hash(t, e, name)[r.Owner()+":write"])
	assert.Equal(t, tok, r.WriteLocker().Token())
	require.NoError(t, r.Unlock(bg()))
	require.NoError(t, r.Unlock(bg()))
	require.NoError(t, r.RUnlock(bg()))
	e.WaitEmpty(t)

	nr := New(e.C, name, WithNonReentrant())
	require.NoError(t, nr.Lock(bg()))
	start := time.Now()
	assert.ErrorIs(t, nr.Lock(bg()), redisync.ErrNonReentrant)
	assert.ErrorIs(t, nr.RLock(bg()), redisync.ErrNonReentrant, "a read while this handle writes")
	require.NoError(t, nr.Unlock(bg()))
	require.NoError(t, nr.RLock(bg()))
	assert.ErrorIs(t, nr.RLock(bg()), redisync.ErrNonReentrant, "one read hold per non-reentrant handle")
	_, err := nr.TryLock(bg())
	assert.ErrorIs(t, err, redisync.ErrNonReentrant, "a write while this handle reads")
	assert.Less(t, time.Since(start), 5*time.Second, "refusals must not wait")
	require.NoError(t, nr.RUnlock(bg()))
	e.WaitEmpty(t)

	assert.Panics(t, func() { New(e.C, name, WithReentrant(), WithNonReentrant()) })
}

// Goroutines sharing one reentrant handle (WithReentrant, or WithOwner)
// loop Lock then Unlock on its write side: every Unlock releases, and the
// lock ends free (see rlock's TestGoroutinesSharingAReentrantHandleLeaveTheLockFree).
func TestGoroutinesSharingAReentrantHandleLeaveTheLockFreeWhenWriting(t *testing.T) {
	for what, opt := range map[string]Option{"WithReentrant": WithReentrant(), "WithOwner": WithOwner("job-7")} {
		t.Run(what, func(t *testing.T) {
			e := setup(t)
			const name = "shared:reentrant"
			locktest.ShareReentrantHandle(t, New(e.C, name, opt), 8, 1500*time.Millisecond)
			assert.False(t, e.Exists(t, name), "lock left held after every Unlock: %s", e.Describe(t))
		})
	}
}

package redlock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
)

// Issue 12, defect 11, for redlock: one Mutex shared by goroutines, the
// sync.Mutex habit. The counter is a read-pause-write, so any overlap of two
// critical sections loses an update. On ae978fd a held handle nested
// without I/O and the goroutines were inside together (fails there; also
// under internal/teeth's shared_handle mutant).
func TestGoroutinesSharingOneRedlockExcludeEachOther(t *testing.T) {
	ms := startMasters(t, 3)
	m := New(ms.clients, "shared:counter")
	const goroutines, each = 3, 40
	var (
		counter atomic.Int64 // atomic only so that -race reports overlaps as a wrong count, not a data race
		wg      sync.WaitGroup
	)
	for range goroutines {
		wg.Go(func() {
			for range each {
				if err := m.Lock(bg()); err != nil {
					t.Error(err)
					return
				}
				v := counter.Load()
				time.Sleep(200 * time.Microsecond)
				counter.Store(v + 1)
				if err := m.Unlock(bg()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(goroutines*each), counter.Load(), "critical sections overlapped")
	assert.Zero(t, ms.held(t, "shared:counter"))
	assert.ErrorIs(t, m.Err(), redisync.ErrNotHeld)
}

// A nested Lock on a default handle waits like a nested sync.Mutex.Lock
// (bounded by ctx) and leaves the hold as it was; TryLock says busy.
func TestNestedRedlockLockWaitsLikeSyncMutex(t *testing.T) {
	ms := startMasters(t, 3)
	m := New(ms.clients, "shared:nested")
	assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrNotHeld, "a handle that never held")
	require.NoError(t, m.Lock(bg()))
	tok := m.Token()
	ok, err := m.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok, "TryLock on a held handle")
	const wait = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(bg(), wait)
	defer cancel()
	start := time.Now()
	assert.Equal(t, context.DeadlineExceeded, m.Lock(ctx))
	assert.GreaterOrEqual(t, time.Since(start), wait-10*time.Millisecond, "the nested Lock did not wait")
	assert.NoError(t, m.Err())
	assert.Equal(t, tok, m.Token())

	// Another goroutine's Lock gets in after the Unlock, with a new token.
	got := make(chan error, 1)
	go func() { got <- m.Lock(bg()) }()
	select {
	case err := <-got:
		t.Fatalf("Lock got in while the handle was held: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, m.Unlock(bg()))
	require.NoError(t, <-got)
	assert.Greater(t, m.Token(), tok)
	require.NoError(t, m.Unlock(bg()))
	assert.ErrorIs(t, m.Unlock(bg()), redisync.ErrNotHeld)
	assert.Zero(t, ms.held(t, "shared:nested"))
}

// WithReentrant keeps the old model: every Lock on the handle nests, from
// any goroutine, without I/O; only the last Unlock releases.
func TestReentrantRedlockNestsAcrossGoroutines(t *testing.T) {
	ms := startMasters(t, 3)
	m := New(ms.clients, "shared:reentrant", WithReentrant())
	require.NoError(t, m.Lock(bg()))
	tok := m.Token()
	got := make(chan error, 1)
	go func() { got <- m.Lock(bg()) }()
	require.NoError(t, <-got)
	assert.Equal(t, tok, m.Token())
	require.NoError(t, m.Unlock(bg()))
	assert.NoError(t, m.Err(), "one hold left")
	assert.Equal(t, 3, ms.held(t, "shared:reentrant"))
	require.NoError(t, m.Unlock(bg()))
	assert.Zero(t, ms.held(t, "shared:reentrant"))
}

package rwlock

import (
	"context"
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
)

func hash(t *testing.T, e *locktest.Env, name string) map[string]string {
	t.Helper()
	m, err := e.Do(t, "HGETALL", name).AsStrMap()
	require.NoError(t, err)
	return m
}

func TestTwentyReadersShareWhileAWriterWaits(t *testing.T) {
	e := setup(t)
	const name = "rw:readers"
	readers := make([]*RWMutex, 20)
	for i := range readers {
		readers[i] = New(e.C, name)
		require.NoError(t, readers[i].RLock(bg()), "reader %d", i)
	}
	h := hash(t, e, name)
	assert.Equal(t, "read", h["mode"])
	for _, r := range readers {
		assert.Equal(t, "1", h[r.Owner()], "each reader has its own count")
		assert.True(t, e.Exists(t, "{"+name+"}:"+r.Owner()+":rwlock_timeout:1"), "each read hold has its own lease key")
	}

	writer := New(e.C, name)
	got := make(chan error, 1)
	go func() { got <- writer.Lock(bg()) }()
	e.WaitSubscribed(t, "redisson_rwlock:{"+name+"}") // the writer is waiting
	for i, r := range readers {
		select {
		case <-got:
			t.Fatalf("writer got in while %d readers held", len(readers)-i)
		default:
		}
		require.NoError(t, r.RUnlock(bg()))
	}
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("writer not granted after the readers left")
	}
	h = hash(t, e, name)
	assert.Equal(t, "write", h["mode"])
	assert.Equal(t, "1", h[writer.Owner()+":write"])
	ok, err := readers[0].TryRLock(bg())
	require.NoError(t, err)
	assert.False(t, ok, "a reader got in under a writer")
	require.NoError(t, writer.Unlock(bg()))
	e.WaitEmpty(t)
	assert.Zero(t, eng(e.C).Watchdog.Len())
}

func TestWritersExcludeReadersAndWritersUnderRandomLoad(t *testing.T) {
	e := setup(t)
	const name = "rw:oracle"
	const workers, perWorker = 8, 250 // 2,000 operations
	var (
		readers, writers atomic.Int32
		violations       atomic.Int32
		reads, writes    atomic.Int64
		wg               sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 11))
			rw := New(e.C, name)
			for range perWorker {
				if r.IntN(3) == 0 {
					if err := rw.Lock(bg()); err != nil {
						t.Error(err)
						return
					}
					if writers.Add(1) != 1 || readers.Load() != 0 {
						violations.Add(1)
					}
					time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond)
					writers.Add(-1)
					writes.Add(1)
					if err := rw.Unlock(bg()); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				if err := rw.RLock(bg()); err != nil {
					t.Error(err)
					return
				}
				readers.Add(1)
				if writers.Load() != 0 {
					violations.Add(1)
				}
				time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond)
				readers.Add(-1)
				reads.Add(1)
				if err := rw.RUnlock(bg()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d reads, %d writes", reads.Load(), writes.Load())
	require.Zero(t, violations.Load(), "a writer overlapped a reader or another writer")
	require.Equal(t, int64(workers*perWorker), reads.Load()+writes.Load())
	e.WaitEmpty(t)
}

func TestDowngradeWakesAWaitingReaderAtOnce(t *testing.T) {
	// MaxPoll is 30 s: only the wake-up published by the downgrade can
	// hand the lock over quickly.
	e := setup(t, redisync.WithMaxPoll(30*time.Second))
	const name = "rw:downgrade"
	w := New(e.C, name, WithReentrant()) // downgrading is re-entry
	require.NoError(t, w.Lock(bg()))
	require.NoError(t, w.RLock(bg()), "a writer may take read holds")
	wtok := w.WriteLocker().Token()
	assert.Equal(t, wtok, w.ReadLocker().Token(), "reads under a write carry its token")

	reader := New(e.C, name)
	got := make(chan time.Time, 1)
	go func() {
		if err := reader.RLock(bg()); err != nil {
			t.Error(err)
		}
		got <- time.Now()
	}()
	e.WaitSubscribed(t, "redisson_rwlock:{"+name+"}")
	time.Sleep(20 * time.Millisecond) // let the reader's first attempts fail
	unlocked := time.Now()
	require.NoError(t, w.Unlock(bg()))
	select {
	case at := <-got:
		t.Logf("reader woken %v after the downgrade", at.Sub(unlocked))
		assert.Less(t, at.Sub(unlocked), 500*time.Millisecond)
	case <-time.After(5 * time.Second):
		t.Fatal("downgrade did not wake the waiting reader")
	}
	h := hash(t, e, name)
	assert.Equal(t, "read", h["mode"])
	assert.NotContains(t, h, w.Owner()+":write")
	assert.Equal(t, wtok, reader.ReadLocker().Token(), "the read phase keeps the token")
	assert.ErrorIs(t, w.Unlock(bg()), redisync.ErrNotHeld)
	require.NoError(t, w.RUnlock(bg()))
	require.NoError(t, reader.RUnlock(bg()))
	e.WaitEmpty(t)
}

func TestUpgradeFailsAtOnce(t *testing.T) {
	e := setup(t)
	const name = "rw:upgrade"
	rw := New(e.C, name, WithOwner("owner-1"))
	require.NoError(t, rw.RLock(bg()))
	start := time.Now()
	assert.ErrorIs(t, rw.Lock(bg()), ErrUpgrade)
	ok, err := rw.TryLock(bg())
	assert.False(t, ok)
	assert.ErrorIs(t, err, ErrUpgrade)
	// Another handle of the same owner is refused by the script.
	same := New(e.C, name, WithOwner("owner-1"))
	assert.ErrorIs(t, same.Lock(bg()), ErrUpgrade)
	assert.Less(t, time.Since(start), time.Second, "upgrade must not wait")
	require.NoError(t, rw.RUnlock(bg()))
	require.NoError(t, rw.Lock(bg()), "after the reads are gone the write lock is free")
	require.NoError(t, rw.Unlock(bg()))
	e.WaitEmpty(t)
}

func TestStoppedReaderLosesItsShareWhileOthersKeepTheirs(t *testing.T) {
	// 300 ms (200 ms of slack between renewals) lost the keeper's share
	// beside a second make test, where the process goes unscheduled for
	// 300 ms at times; 1 s leaves over 600 ms, and the stopped reader's
	// share still expires on the server's clock alone.
	const lease = time.Second
	e := setup(t, redisync.WithWatchdogTimeout(lease))
	const name = "rw:zombie"
	keeper := New(e.C, name)
	require.NoError(t, keeper.RLock(bg()))

	// The second reader's process stops renewing (its Client goes away
	// without releasing): its Redis state is left to its lease.
	other := e.Client(t, redisync.WithWatchdogTimeout(lease))
	stopped := New(other, name)
	require.NoError(t, stopped.RLock(bg()))
	stoppedKey := "{" + name + "}:" + stopped.Owner() + ":rwlock_timeout:1"
	keeperKey := "{" + name + "}:" + keeper.Owner() + ":rwlock_timeout:1"
	other.Close()
	assert.ErrorIs(t, stopped.ReadLocker().Err(), redisync.ErrLockLost)
	closedAt := time.Now()
	eventually(t, 2*lease, func() bool { return !e.Exists(t, stoppedKey) }, "stopped reader's lease key expired")
	t.Logf("stopped reader's share expired %v after renewal stopped", time.Since(closedAt))

	// The keeper's renewals never extended the stopped reader's key, and
	// keep its own alive over many leases.
	time.Sleep(3 * lease)
	assert.NoError(t, keeper.ReadLocker().Err())
	assert.True(t, e.Exists(t, keeperKey))
	assert.False(t, e.Exists(t, stoppedKey))

	// A writer waits for the live reader only: the dead reader's leftover
	// field does not keep the lock.
	writer := New(e.C, name)
	ok, err := writer.TryLock(bg())
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Contains(t, hash(t, e, name), stopped.Owner(), "the dead reader's field is still there")
	require.NoError(t, keeper.RUnlock(bg()))
	ok, err = writer.TryLock(bg())
	require.NoError(t, err)
	assert.True(t, ok, "the last live reader's release frees the lock")
	require.NoError(t, writer.Unlock(bg()))
	e.WaitEmpty(t)
}

func TestWriterPreferenceStopsReaderStarvation(t *testing.T) {
	e := setup(t)
	const name = "rw:starve"
	ctx, cancel := context.WithCancel(bg())
	var wg sync.WaitGroup
	var reads atomic.Int64
	// Ten readers loop read-lock, work, unlock: staggered, they keep the
	// lock read-held almost without a gap, which starves a plain writer.
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := New(e.C, name)
			for ctx.Err() == nil {
				if err := r.RLock(ctx); err != nil {
					return
				}
				reads.Add(1)
				time.Sleep(time.Duration(1+i%3) * time.Millisecond)
				if err := r.RUnlock(bg()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	eventually(t, 5*time.Second, func() bool { return reads.Load() > 50 }, "readers running")

	writer := New(e.C, name, WithWriterPreference(), WithWaiterTimeout(time.Second))
	wctx, wcancel := context.WithTimeout(bg(), 10*time.Second)
	defer wcancel()
	start := time.Now()
	err := writer.Lock(wctx)
	t.Logf("writer got in after %v, %d reads", time.Since(start), reads.Load())
	require.NoError(t, err, "writer starved by readers")
	assert.Equal(t, "write", hash(t, e, name)["mode"])
	assert.False(t, e.Exists(t, "redisync_rwlock_writers:{"+name+"}:"+name), "granted writer withdrew its claim")
	require.NoError(t, writer.Unlock(bg()))
	cancel()
	wg.Wait()
	e.WaitEmpty(t)
}

func TestCancelledWaitersLeaveNothingBehind(t *testing.T) {
	e := setup(t)
	_, cancelled := locktest.CancelStorm(t, 8, 60, func(r *rand.Rand) locktest.Acquirer {
		rw := New(e.C, "rw:cancel", WithWriterPreference(), WithWaiterTimeout(time.Minute))
		return func(ctx context.Context) (func() error, error) {
			if r.IntN(2) == 0 {
				return func() error { return rw.Unlock(bg()) }, rw.Lock(ctx)
			}
			return func() error { return rw.RUnlock(bg()) }, rw.RLock(ctx)
		}
	})
	assert.Greater(t, cancelled, int64(20))
	// Writer claims last a minute: only withdrawing them explains this.
	e.WaitEmpty(t)
	assert.Zero(t, eng(e.C).Watchdog.Len())
}

func TestReadTokensSitBetweenTheWritesAroundThem(t *testing.T) {
	e := setup(t)
	const name = "rw:tokens"
	w, r1, r2 := New(e.C, name), New(e.C, name), New(e.C, name)
	require.NoError(t, w.Lock(bg()))
	t1 := w.WriteLocker().Token()
	require.NoError(t, w.Unlock(bg()))
	require.NoError(t, r1.RLock(bg()))
	require.NoError(t, r2.RLock(bg()))
	phase := r1.ReadLocker().Token()
	assert.Greater(t, phase, t1)
	assert.Equal(t, phase, r2.ReadLocker().Token(), "readers of one phase share its token")
	require.NoError(t, r1.RUnlock(bg()))
	require.NoError(t, r2.RUnlock(bg()))
	require.NoError(t, w.Lock(bg()))
	assert.Greater(t, w.WriteLocker().Token(), phase)
	require.NoError(t, w.Unlock(bg()))
	e.WaitEmpty(t)
}

func TestLockersAndLoss(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(300*time.Millisecond))
	const name = "rw:lockers"
	rw := New(e.C, name)
	var l redisync.Locker = rw.WriteLocker()
	require.NoError(t, redisync.Do(bg(), l, func(ctx context.Context) error {
		assert.Equal(t, "write", hash(t, e, name)["mode"])
		return nil
	}))
	rl := rw.ReadLocker()
	require.NoError(t, rl.Lock(bg()))
	time.Sleep(time.Second) // renewed past three leases
	require.NoError(t, rl.Err())
	e.Do(t, "DEL", name)
	select {
	case <-rl.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("read loss not signalled")
	}
	assert.ErrorIs(t, rl.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, rl.Unlock(bg()), redisync.ErrLockLost)
	e.WaitEmpty(t)
}

func TestBadInput(t *testing.T) {
	e := setup(t)
	assert.ErrorIs(t, New(e.C, "").RLock(bg()), redisync.ErrInvalidName)
	assert.ErrorIs(t, New(e.C, strings.Repeat("x", MaxNameLength+1)).Lock(bg()), redisync.ErrInvalidName)
	assert.Panics(t, func() { New(e.C, "x", WithWaiterTimeout(time.Millisecond)) })
	assert.ErrorIs(t, New(e.C, "x", WithLease(time.Microsecond)).RLock(bg()), redisync.ErrInvalidLease)
	rw := New(e.C, "x")
	assert.ErrorIs(t, rw.Unlock(bg()), redisync.ErrNotHeld)
	assert.ErrorIs(t, rw.RUnlock(bg()), redisync.ErrNotHeld)
	e.C.Close()
	assert.ErrorIs(t, rw.RLock(bg()), redisync.ErrClosed)
	assert.Zero(t, e.DBSize(t))
}

func TestForceUnlockDropsEveryHold(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(300*time.Millisecond))
	const name = "rw:force"
	r1, r2 := New(e.C, name), New(e.C, name)
	require.NoError(t, r1.RLock(bg()))
	require.NoError(t, r2.RLock(bg()))
	ok, err := New(e.C, name).ForceUnlock(bg())
	require.NoError(t, err)
	assert.True(t, ok)
	for _, r := range []*RWMutex{r1, r2} {
		select {
		case <-r.ReadLocker().Done():
		case <-time.After(2 * time.Second):
			t.Fatal("reader not told")
		}
		assert.ErrorIs(t, r.ReadLocker().Err(), redisync.ErrLockLost)
	}
	w := New(e.C, name)
	ok, err = w.TryLock(bg())
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, w.Unlock(bg()))
}

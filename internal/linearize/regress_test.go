package linearize

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
)

var bg = context.Background()

// Issue 22, defect 3: an Unlock on a handle that never held, sent while its
// first Lock is in flight (the server paused for writes), releases nothing:
// it returns ErrNotHeld, and the Lock's hold is there in Redis for as long
// as its Done is open.
func TestStrayUnlockDuringTheFirstLockReleasesNothing(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			for _, owner := range []string{"", "job-3"} {
				e := locktest.Setup(t)
				name := "stray:" + k.name
				m := k.new(e.C, name, owner, 0)
				e.Do(t, "CLIENT", "PAUSE", "1000", "WRITE")
				locked := make(chan error, 1)
				go func() { locked <- m.Lock(bg) }()
				time.Sleep(200 * time.Millisecond) // the acquire is on its way
				ctx, cancel := context.WithTimeout(bg, 5*time.Second)
				err := m.Unlock(ctx)
				cancel()
				assert.ErrorIs(t, err, redisync.ErrNotHeld, "owner %q: the handle held nothing when Unlock came", owner)
				require.NoError(t, <-locked)
				require.NoError(t, m.Err())
				assert.True(t, e.Exists(t, name), "owner %q: the Lock's hold is in Redis while its Done is open", owner)
				ok, err := k.new(e.C, name, "", 0).TryLock(bg)
				require.NoError(t, err)
				assert.False(t, ok, "owner %q: another owner got in while the handle holds", owner)
				select {
				case <-m.Done():
					t.Fatalf("owner %q: Done closed while held", owner)
				default:
				}
				require.NoError(t, m.Unlock(bg))
				assert.False(t, e.Exists(t, name), "%s", e.Describe(t))
			}
		})
	}
}

// Issue 22, defect 4: two handles share an owner id with a fixed lease.
// b nests while a holds, raising the server lease; when a's own lease runs
// out by its clock a reports the loss, and the Unlock that cleans up after
// it removes a's hold only: b still holds, nobody else gets in, and b's
// Unlock frees the lock.
func TestLocalExpiryOfASharedOwnersHoldLeavesTheOtherHandlesHold(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			e := locktest.Setup(t)
			name := "shared-expiry:" + k.name
			a := k.new(e.C, name, "job-7", lease)
			b := k.new(e.Client(t), name, "job-7", lease) // another process
			require.NoError(t, a.Lock(bg))
			time.Sleep(lease / 2)
			require.NoError(t, b.Lock(bg)) // nests, and raises the lease to 2 s from now
			select {
			case <-a.Done():
			case <-time.After(2 * lease):
				t.Fatal("a's fixed lease ran out without a loss")
			}
			assert.ErrorIs(t, a.Err(), redisync.ErrLockLost)
			assert.ErrorIs(t, a.Unlock(bg), redisync.ErrLockLost)
			require.NoError(t, b.Err(), "b's hold is its own")
			assert.True(t, e.Exists(t, name), "a's cleanup took b's hold: %s", e.Describe(t))
			ok, err := k.new(e.C, name, "", 0).TryLock(bg)
			require.NoError(t, err)
			assert.False(t, ok, "another owner got in while b holds")
			require.NoError(t, b.Unlock(bg))
			assert.False(t, e.Exists(t, name), "%s", e.Describe(t))
		})
	}
}

// A shared owner's hold that expired on the server is not the hold another
// handle of the owner took afterwards: the Unlock that cleans up after the
// expired one leaves the later hold alone (rwlock's releases check the
// lock's phase token, as rlock's and fairlock's check the hash's).
func TestCleanupOfAnExpiredSharedOwnerHoldLeavesALaterHoldAlone(t *testing.T) {
	t.Parallel()
	const lease = 600 * time.Millisecond
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			e := locktest.Setup(t)
			name := "shared-later:" + k.name
			a := k.new(e.C, name, "job-7", lease)
			b := k.new(e.Client(t), name, "job-7", 0) // another process
			require.NoError(t, a.Lock(bg))
			<-a.Done()
			locktest.Eventually(t, 5*time.Second, func() bool { return !e.Exists(t, name) }, "the lease ran out on the server")
			require.NoError(t, b.Lock(bg)) // a new hold of the owner
			assert.ErrorIs(t, a.Unlock(bg), redisync.ErrLockLost)
			require.NoError(t, b.Err())
			assert.True(t, e.Exists(t, name), "a's cleanup took b's later hold: %s", e.Describe(t))
			ok, err := k.new(e.C, name, "", 0).TryLock(bg)
			require.NoError(t, err)
			assert.False(t, ok, "another owner got in while b holds")
			require.NoError(t, b.Unlock(bg))
			assert.False(t, e.Exists(t, name), "%s", e.Describe(t))
		})
	}
}

// Issue 22, defect 4 across processes: two processes hold as one owner id
// in watchdog mode; one stalls past its lease (its connection held back)
// while the other renews. The stalled one reports the loss, and the Unlock
// that cleans up after it removes its own hold only: the renewing one
// holds on and nobody else gets in.
func TestSharedOwnerHandleStalledPastItsLeaseLeavesTheRenewingHandlesHold(t *testing.T) {
	t.Parallel()
	const lease = time.Second
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			e := locktest.Setup(t)
			p := newStallProxy(t, e.Srv.Addr())
			rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.Addr()}, DisableCache: true, ForceSingleClient: true})
			require.NoError(t, err)
			t.Cleanup(rc.Close)
			stalled := redisync.New(rc, redisync.WithWatchdogTimeout(lease))
			t.Cleanup(func() { stalled.Close() })
			name := "shared-stall:" + k.name
			a := k.new(stalled, name, "job-7", 0)
			b := k.new(e.Client(t, redisync.WithWatchdogTimeout(lease)), name, "job-7", 0)
			require.NoError(t, a.Lock(bg))
			require.NoError(t, b.Lock(bg))
			p.frozen.Store(true)
			select {
			case <-a.Done():
			case <-time.After(3 * lease):
				t.Fatal("a's renewals stalled past its lease without a loss")
			}
			time.Sleep(lease / 2) // b renews meanwhile
			p.frozen.Store(false)
			assert.ErrorIs(t, a.Unlock(bg), redisync.ErrLockLost)
			require.NoError(t, b.Err(), "b's hold is its own")
			assert.True(t, e.Exists(t, name), "a's cleanup took b's hold: %s", e.Describe(t))
			ok, err := k.new(e.C, name, "", 0).TryLock(bg)
			require.NoError(t, err)
			assert.False(t, ok, "another owner got in while b holds")
			require.NoError(t, b.Unlock(bg))
			assert.False(t, e.Exists(t, name), "%s", e.Describe(t))
		})
	}
}

package redisync_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Issue 15: one hold surface. Permits, a read-write lock (as itself: its
// write side) and a lock combine in one multilock, nested in another, and
// Do runs under the lot.
func TestEveryKindIsALockerThatMultilockAndDoAccept(t *testing.T) {
	env := locktest.Setup(t)
	ctx := context.Background()
	pool := semaphore.New(env.C, "kinds:pool", 3)
	rw := rwlock.New(env.C, "kinds:rw")
	inner := multilock.New(pool.Locker(2), rw)
	outer := multilock.New(inner, rlock.New(env.C, "kinds:mu"))
	err := redisync.Do(ctx, outer, func(ctx context.Context) error {
		free, err := pool.Available(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, free, "the Locker's two permits are held")
		ok, err := rwlock.New(env.C, "kinds:rw").TryRLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "the RWMutex is write-locked")
		assert.NotZero(t, rw.Token())
		ok, err = rlock.New(env.C, "kinds:mu").TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok)
		return nil
	})
	require.NoError(t, err)
	free, err := pool.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, free)
	assert.Equal(t, []string{"kinds:pool"}, env.Keys(t), "only the semaphore's configuration is left")
}

// Close reports every hold lost and does not release it; an Unlock after
// Close still removes what is left, as after any other loss, with an error
// matching ErrLockLost and ErrClosed: the name is free for another Client
// at once instead of after its lease, for every kind alike. Before, every
// kind but redlock returned ErrClosed and sent nothing.
func TestUnlockAfterCloseReleasesWhatCloseReportedLost(t *testing.T) {
	srv := redistest.Start(t)
	mk := map[string]func(c *redisync.Client, n string) redisync.Locker{
		"rlock":     func(c *redisync.Client, n string) redisync.Locker { return rlock.New(c, n) },
		"fairlock":  func(c *redisync.Client, n string) redisync.Locker { return fairlock.New(c, n) },
		"rwlock":    func(c *redisync.Client, n string) redisync.Locker { return rwlock.New(c, n).WriteLocker() },
		"rwlock-r":  func(c *redisync.Client, n string) redisync.Locker { return rwlock.New(c, n).ReadLocker() },
		"semaphore": func(c *redisync.Client, n string) redisync.Locker { return semaphore.New(c, n, 1).Locker(1) },
		"multilock": func(c *redisync.Client, n string) redisync.Locker {
			return multilock.New(rlock.New(c, n+":a"), rlock.New(c, n+":b"))
		},
		"redlock": func(c *redisync.Client, n string) redisync.Locker { return redlock.New([]*redisync.Client{c}, n) },
	}
	other := redisync.New(srv.Client(t))
	t.Cleanup(func() { other.Close() })
	var kinds []string
	for k := range mk {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		c := redisync.New(srv.Client(t))
		n := "afterclose:" + kind
		l := mk[kind](c, n)
		require.NoError(t, l.Lock(context.Background()), kind)
		require.NoError(t, c.Close())
		select {
		case <-l.Done(): // a multilock's watcher sees its components' loss
		case <-time.After(time.Second):
			t.Fatalf("%s: Done still open after Close", kind)
		}
		require.ErrorIs(t, l.Err(), redisync.ErrLockLost, kind)
		err := l.Unlock(context.Background())
		assert.ErrorIs(t, err, redisync.ErrLockLost, kind)
		assert.ErrorIs(t, err, redisync.ErrClosed, kind)
		// A write lock, so that a read hold left behind counts too.
		o := mk[kind](other, n)
		if kind == "rwlock-r" {
			o = rwlock.New(other, n).WriteLocker()
		}
		ok, err := o.TryLock(context.Background())
		require.NoError(t, err, kind)
		assert.True(t, ok, "%s: the name is still held after Unlock after Close", kind)
		if ok {
			require.NoError(t, o.Unlock(context.Background()), kind)
		}
	}
}

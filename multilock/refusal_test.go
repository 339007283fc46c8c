package multilock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

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

// TestARefusedComponentIsReportedAtOnceWithoutIO: a component whose every
// method is refused without I/O — its name, owner id, lease or count
// cannot be used — makes every method of the multilock return that error
// at once and send nothing, wherever it sorts: behind a busy component
// (where a round stopped at the busy one, so TryLock said busy and Lock
// waited until ctx ended) as behind a free one (where a round granted the
// free one, drawing a token, and gave it back). One case per Locker type
// of this module, nested multilocks included.
func TestARefusedComponentIsReportedAtOnceWithoutIO(t *testing.T) {
	e := setup(t)
	ctx := bg()
	busy := rlock.New(e.C, "a:busy", rlock.WithLease(time.Minute)) // fixed: no renewal traffic
	ok, err := busy.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	defer busy.Unlock(ctx)
	keysBefore := allKeys(t, e)

	const ms = time.Millisecond // below redisync.MinLease
	refused := []struct {
		what string
		l    redisync.Locker // named after "a:": tried after the front component
		want error
	}{
		{"rlock lease", rlock.New(e.C, "b:r", rlock.WithLease(ms)), redisync.ErrInvalidLease},
		{"rlock owner", rlock.New(e.C, "b:r", rlock.WithOwner("redisync:token")), redisync.ErrInvalidOwner},
		{"rlock name", rlock.New(e.C, "redisync_b"), redisync.ErrInvalidName},
		{"fairlock lease", fairlock.New(e.C, "b:f", fairlock.WithLease(ms)), redisync.ErrInvalidLease},
		{"fairlock owner", fairlock.New(e.C, "b:f", fairlock.WithOwner("mode")), redisync.ErrInvalidOwner},
		{"rwlock", rwlock.New(e.C, "b:rw", rwlock.WithLease(ms)), redisync.ErrInvalidLease},
		{"rwlock write side", rwlock.New(e.C, "b:rw", rwlock.WithOwner("7")).WriteLocker(), redisync.ErrInvalidOwner},
		{"rwlock read side", rwlock.New(e.C, "b:rw", rwlock.WithLease(ms)).ReadLocker(), redisync.ErrInvalidLease},
		{"semaphore lease", semaphore.New(e.C, "b:s", 2, semaphore.WithLease(ms)).Locker(1), redisync.ErrInvalidLease},
		{"semaphore count", semaphore.New(e.C, "b:s", 2).Locker(semaphore.MaxPermits + 1), semaphore.ErrBadCount},
		{"semaphore capacity", semaphore.New(e.C, "b:s", semaphore.MaxPermits+1).Locker(1), semaphore.ErrBadCount},
		{"redlock", redlock.New([]*redisync.Client{e.C}, "b:red", redlock.WithLease(ms)), redisync.ErrInvalidLease},
		{"nested multilock", New(rlock.New(e.C, "b:n1"), rlock.New(e.C, "b:n2", rlock.WithLease(ms))), redisync.ErrInvalidLease},
	}
	for _, r := range refused {
		for _, front := range []string{"a:busy", "a:free"} {
			t.Run(fmt.Sprintf("%s behind %s", r.what, front), func(t *testing.T) {
				m := New(rlock.New(e.C, front), r.l)
				require.Equal(t, front, m.Components()[0].(Named).Name(), "the front component is tried first")
				calls := commandCalls(t, e)

				ok, err := m.TryLock(ctx)
				assert.False(t, ok)
				assert.ErrorIs(t, err, r.want, "TryLock")
				lctx, cancel := context.WithTimeout(ctx, time.Second)
				start := time.Now()
				err = m.Lock(lctx)
				cancel()
				assert.ErrorIs(t, err, r.want, "Lock (returned after %v)", time.Since(start).Round(time.Millisecond))
				assert.False(t, errors.Is(err, context.DeadlineExceeded), "Lock waited until ctx ended")
				assert.ErrorIs(t, m.Unlock(ctx), r.want, "Unlock")
				_, err = m.IsLocked(ctx)
				assert.ErrorIs(t, err, r.want, "IsLocked")
				_, err = m.Holders(ctx)
				assert.ErrorIs(t, err, r.want, "Holders")

				assert.Equal(t, calls, commandCalls(t, e), "a multilock with a refused component sent commands")
				assert.Equal(t, keysBefore, allKeys(t, e), "a multilock with a refused component wrote to Redis")
			})
		}
	}
}

// allKeys is every key, the last-token keys included (a grant given back
// leaves one: env.Keys hides them).
func allKeys(t *testing.T, e *locktest.Env) []string {
	t.Helper()
	ks, err := e.Do(t, "KEYS", "*").AsStrSlice()
	require.NoError(t, err)
	slices.Sort(ks)
	return ks
}

// commandCalls is how many commands the server ran, INFO (this count's own
// command) left out.
func commandCalls(t *testing.T, e *locktest.Env) int64 {
	t.Helper()
	info, err := e.Do(t, "INFO", "commandstats").ToString()
	require.NoError(t, err)
	var n int64
	for cmd, calls := range redistest.CommandStats(info) {
		if cmd != "info" {
			n += calls
		}
	}
	return n
}

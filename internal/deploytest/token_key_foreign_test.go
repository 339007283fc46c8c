package deploytest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// TestForeignDataUnderTokenKeysPlantedDuringAHold: a user's value lands
// under a hold's last-token key (redisync_lock_token:{H}:N) or rwlock phase
// key (redisync_rwlock_token:{H}:N) while the hold runs — a string that is
// no number, a number without expiry, a hash, a list. The release every
// hold now ends with writes the last-token key (kept 10 s): it must not
// write over the value. It answers a typed error matching ErrWrongKind,
// naming the primitive and the lock, leaves the value byte-identical, and
// changes nothing else (no half-done release: the lock is as it was); the
// next acquisition of the name is refused the same way, never granted over
// the value.
func TestForeignDataUnderTokenKeysPlantedDuringAHold(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	c := redisync.New(rc)
	defer c.Close()
	bg := context.Background()
	plants := [][]string{{"SET", "", "not-a-number"}, {"SET", "", "12345"}, {"HSET", "", "f", "v"}, {"RPUSH", "", "a"}}
	type kind struct {
		name, primitive, prefix string
		lock                    func(name string) (unlock func() error, try func() (bool, error))
	}
	kinds := []kind{
		{"rlock", "rlock", keys.LockTokenPrefix, func(name string) (func() error, func() (bool, error)) {
			m := rlock.New(c, name)
			require.NoError(t, m.Lock(bg))
			return func() error { return m.Unlock(bg) }, func() (bool, error) { return rlock.New(c, name).TryLock(bg) }
		}},
		{"fairlock", "fairlock", keys.LockTokenPrefix, func(name string) (func() error, func() (bool, error)) {
			m := fairlock.New(c, name)
			require.NoError(t, m.Lock(bg))
			return func() error { return m.Unlock(bg) }, func() (bool, error) { return fairlock.New(c, name).TryLock(bg) }
		}},
		{"rwlock-write", "rwlock", keys.LockTokenPrefix, func(name string) (func() error, func() (bool, error)) {
			m := rwlock.New(c, name)
			require.NoError(t, m.Lock(bg))
			return func() error { return m.Unlock(bg) }, func() (bool, error) { return rwlock.New(c, name).TryLock(bg) }
		}},
		{"rwlock-read", "rwlock", keys.LockTokenPrefix, func(name string) (func() error, func() (bool, error)) {
			m := rwlock.New(c, name)
			require.NoError(t, m.RLock(bg))
			return func() error { return m.RUnlock(bg) }, func() (bool, error) { return rwlock.New(c, name).TryLock(bg) }
		}},
		{"rwlock-write-phase", "rwlock", keys.RWTokenPrefix, func(name string) (func() error, func() (bool, error)) {
			m := rwlock.New(c, name)
			require.NoError(t, m.Lock(bg))
			return func() error { return m.Unlock(bg) }, func() (bool, error) { return rwlock.New(c, name).TryLock(bg) }
		}},
		{"rwlock-read-phase", "rwlock", keys.RWTokenPrefix, func(name string) (func() error, func() (bool, error)) {
			m := rwlock.New(c, name)
			require.NoError(t, m.RLock(bg))
			return func() error { return m.RUnlock(bg) }, func() (bool, error) { return rwlock.New(c, name).TryLock(bg) }
		}},
	}
	for _, k := range kinds {
		for _, p := range plants {
			name := "tokfor:" + k.name + ":" + p[0] + ":" + p[2]
			t.Run(k.name+"/"+p[0]+" "+p[2], func(t *testing.T) {
				tokenKey, _ := keys.Derived(k.prefix, name)
				unlock, try := k.lock(name)
				redistest.Do(t, rc, "DEL", tokenKey)
				redistest.Do(t, rc, append([]string{p[0], tokenKey}, p[2:]...)...)
				before := keyspaceSnapshot(t, rc)

				err := unlock()
				require.Error(t, err, "released over the user's value")
				assert.True(t, errors.Is(err, redisync.ErrWrongKind), "%v", err)
				var wk *redisync.WrongKindError
				assert.True(t, errors.As(err, &wk), "%v", err)
				assert.True(t, strings.HasPrefix(err.Error(), k.primitive+` "`+name+`"`), "%q names the primitive and the lock", err)
				assert.NotContains(t, err.Error(), "\n")
				assert.Equal(t, before, keyspaceSnapshot(t, rc), "a refused release changed something")
				ok, err := try()
				assert.False(t, ok, "granted over the user's value")
				assert.ErrorIs(t, err, redisync.ErrWrongKind)
				assert.Equal(t, before, keyspaceSnapshot(t, rc), "a refused acquisition changed something")
			})
		}
	}
}

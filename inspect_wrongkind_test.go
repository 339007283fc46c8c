package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// inspectedKind is one lock kind's inspection surface: the inspector
// methods and Holders.
type inspectedKind struct {
	name   string
	layout string // kinds of one layout (rlock and fairlock) read each other's holds
	open   func(c *redisync.Client, name string) (inspector, func(context.Context) error)
}

func inspectedKinds() []inspectedKind {
	holders := func(f func(context.Context) error) func(context.Context) error { return f }
	return []inspectedKind{
		{"rlock", "lock", func(c *redisync.Client, n string) (inspector, func(context.Context) error) {
			m := rlock.New(c, n)
			return m, holders(func(ctx context.Context) error { _, err := m.Holders(ctx); return err })
		}},
		{"fairlock", "lock", func(c *redisync.Client, n string) (inspector, func(context.Context) error) {
			m := fairlock.New(c, n)
			return m, func(ctx context.Context) error { _, err := m.Holders(ctx); return err }
		}},
		{"rwlock", "rwlock", func(c *redisync.Client, n string) (inspector, func(context.Context) error) {
			m := rwlock.New(c, n)
			return m, func(ctx context.Context) error { _, err := m.Holders(ctx); return err }
		}},
		{"semaphore", "semaphore", func(c *redisync.Client, n string) (inspector, func(context.Context) error) {
			m := semaphore.New(c, n, 2)
			return m, func(ctx context.Context) error { _, err := m.Holders(ctx); return err }
		}},
		{"redlock", "redlock", func(c *redisync.Client, n string) (inspector, func(context.Context) error) {
			m := redlock.New([]*redisync.Client{c}, n)
			return m, func(ctx context.Context) error { _, err := m.Holders(ctx); return err }
		}},
		{"multilock", "lock", func(c *redisync.Client, n string) (inspector, func(context.Context) error) {
			m := multilock.New(rlock.New(c, n))
			return m, func(ctx context.Context) error { _, err := m.Holders(ctx); return err }
		}},
	}
}

// Every kind's inspection (IsLocked, HoldCount, TTL, Holders, ForceUnlock)
// on a name that holds something else — a user's string, list or hash, or
// another kind's lock — answers with the typed wrong-kind error naming the
// kind and the name, never Redis's raw WRONGTYPE, never a "holder" made of
// a semaphore's configuration, and changes nothing. (HoldCount returned
// WRONGTYPE for rlock, fairlock, rwlock and multilock; Holders listed a
// semaphore's "capacity" and "token" fields as holders; IsLocked said true
// and TTL gave the user's key's TTL; ForceUnlock of a semaphore said
// "nothing held" over a user's key.)
func TestInspectionOfAnotherKindIsAWrongKindError(t *testing.T) {
	ctx := context.Background()
	env := locktest.Setup(t)
	plants := []struct {
		name, layout string
		plant        func(t *testing.T, name string)
	}{
		{"string", "", func(t *testing.T, n string) { env.Do(t, "SET", n, "user data") }},
		// (A string with an expiry is what a Redlock node holds: the
		// redlock kind reads it as a hold, by design.)
		{"string with TTL", "redlock", func(t *testing.T, n string) { env.Do(t, "SET", n, "user data", "PX", "60000") }},
		{"list", "", func(t *testing.T, n string) { env.Do(t, "RPUSH", n, "a") }},
		{"hash", "", func(t *testing.T, n string) { env.Do(t, "HSET", n, "owner", "7") }},
		{"hash with TTL", "", func(t *testing.T, n string) {
			env.Do(t, "HSET", n, "f", "not a count")
			env.Do(t, "PEXPIRE", n, "60000")
		}},
		{"rlock", "lock", func(t *testing.T, n string) { require.NoError(t, rlock.New(env.C, n).Lock(ctx)) }},
		{"rwlock", "rwlock", func(t *testing.T, n string) { require.NoError(t, rwlock.New(env.C, n).RLock(ctx)) }},
		{"semaphore", "semaphore", func(t *testing.T, n string) {
			_, err := semaphore.New(env.C, n, 2).Acquire(ctx, 1)
			require.NoError(t, err)
		}},
		{"redlock", "redlock", func(t *testing.T, n string) {
			require.NoError(t, redlock.New([]*redisync.Client{env.C}, n).Lock(ctx))
		}},
	}
	for _, p := range plants {
		for _, k := range inspectedKinds() {
			if p.layout == k.layout {
				continue
			}
			t.Run(k.name+"/on a "+p.name, func(t *testing.T) {
				name := "wrongkind:" + k.name + ":" + p.name
				p.plant(t, name)
				before := snapshot(t, env)
				in, holders := k.open(env.C, name)
				check := func(method string, err error) {
					t.Helper()
					var wk *redisync.WrongKindError
					if !assert.True(t, errors.As(err, &wk), "%s: got %v", method, err) {
						return
					}
					assert.Equal(t, name, wk.Key, method)
					assert.NotContains(t, err.Error(), "WRONGTYPE", method)
					assert.Contains(t, err.Error(), k.name, "%s: the error names the kind", method)
				}
				locked, err := in.IsLocked(ctx)
				check("IsLocked", err)
				assert.False(t, locked)
				n, err := in.HoldCount(ctx)
				check("HoldCount", err)
				assert.Zero(t, n)
				ttl, err := in.TTL(ctx)
				check("TTL", err)
				assert.Zero(t, ttl)
				check("Holders", holders(ctx))
				found, err := in.ForceUnlock(ctx)
				check("ForceUnlock", err)
				assert.False(t, found)
				assert.Equal(t, before, snapshot(t, env), "inspection changed the keyspace")
			})
		}
	}
}

// snapshot is every key's type, contents (DUMP) and whether it expires,
// sorted: what must not change.
func snapshot(t *testing.T, env *locktest.Env) []string {
	t.Helper()
	keys := env.Keys(t)
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		dump, err := env.Do(t, "DUMP", k).ToString()
		require.NoError(t, err)
		out[i] = fmt.Sprintf("%s expires=%v %q", k, env.PTTL(t, k) > 0, dump)
	}
	return out
}

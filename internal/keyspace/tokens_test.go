package keyspace

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// namedLocker is a lock kind's handle on one name, with what it is.
type namedLocker struct {
	label string
	l     redisync.Locker
}

// lockersOn are a handle of every lock kind that keeps the name's last
// token in the last-token key, on name.
func lockersOn(c *redisync.Client, name string) []namedLocker {
	rw := rwlock.New(c, name, rwlock.WithLease(aclLease))
	return []namedLocker{
		{"rlock", rlock.New(c, name, rlock.WithLease(aclLease))},
		{"fairlock", fairlock.New(c, name, fairlock.WithLease(aclLease))},
		{"fairlock (Redisson queue)", fairlock.New(c, name, fairlock.WithLease(aclLease), fairlock.WithRedissonQueue(0))},
		{"rwlock write", rw.WriteLocker()},
		{"rwlock read", rw.ReadLocker()},
	}
}

// A last token with leading zeros ("...05": a decimal with an expiry, which
// the scripts take as theirs; a semaphore's "token" field likewise) is a
// last token of 5: the next token is max(last + 1, server time), above
// every token before. The acquires' common paths compare a last token with
// the server time as strings, which holds only for a decimal without
// leading zeros, so on a Client without holder info (whose acquire on a
// free name takes its common path) as on one with it.
func TestTokenAfterAZeroPaddedLastTokenStillRises(t *testing.T) {
	e := newEnv(t)
	const padded = "0000000000000000000005"
	for _, info := range []bool{false, true} {
		c := redisync.New(e.rc, redisync.WithHolderInfo(info))
		defer c.Close()
		name := "pad:" + map[bool]string{false: "off", true: "on"}[info]
		tokenKey := derived(keys.LockTokenPrefix, name)
		for _, lk := range lockersOn(c, name) {
			require.NoError(t, lk.l.Lock(bg()), lk.label)
			before := lk.l.Token()
			require.NoError(t, lk.l.Unlock(bg()), lk.label)
			e.do(t, "SET", tokenKey, padded, "PX", "60000")
			require.NoError(t, lk.l.Lock(bg()), lk.label)
			assert.Greater(t, lk.l.Token(), before, "holder info %v, %s: a token after a last token of 5 (zero-padded)", info, lk.label)
			require.NoError(t, lk.l.Unlock(bg()), lk.label)
		}
		s := semaphore.New(c, name+":sem", 1)
		p, err := s.Acquire(bg(), 1)
		require.NoError(t, err)
		before := p.Token()
		require.NoError(t, p.Release(bg()))
		e.do(t, "HSET", name+":sem", "token", padded)
		p, err = s.Acquire(bg(), 1)
		require.NoError(t, err)
		assert.Greater(t, p.Token(), before, "holder info %v, semaphore: a token after a last token of 5 (zero-padded)", info)
		require.NoError(t, p.Release(bg()))
	}
}

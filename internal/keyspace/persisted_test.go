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

// docs/keys-and-permissions.md: the common release (of a hold's last
// count, sent with no holder-info key: a Client WithHolderInfo(false);
// a fair lock nobody waits for, a read-write lock the hold has alone, a
// semaphore's only permit) recognises its hold by its token or permit id
// alone, so it releases a hold whose keys someone PERSISTed; every other
// release takes a key without expiry for someone else's and leaves it:
// Unlock answers ErrLockLost, a semaphore's Release ErrWrongKind.
func TestAHoldWhoseExpiryWasRemovedIsReleasedOnlyByTheCommonRelease(t *testing.T) {
	e := newEnv(t)
	c := redisync.New(e.rc, redisync.WithHolderInfo(false))
	defer c.Close()
	const name = "persist"
	for _, lk := range lockersOn(c, name) {
		require.NoError(t, lk.l.Lock(bg()), lk.label)
		e.do(t, "PERSIST", name)
		err := lk.l.Unlock(bg())
		n, _ := e.do(t, "EXISTS", name).AsInt64()
		assert.Zero(t, n, "%s, the common release: the hold is released (Unlock: %v)", lk.label, err)
		assert.NoError(t, err, lk.label)
		e.do(t, "DEL", name)
	}
	holders, permits := derived(keys.SemHoldersPrefix, name+":sem"), derived(keys.SemPermitsPrefix, name+":sem")
	s := semaphore.New(c, name+":sem", 2, semaphore.WithLease(aclLease))
	p, err := s.Acquire(bg(), 1)
	require.NoError(t, err)
	e.do(t, "PERSIST", holders)
	e.do(t, "PERSIST", permits)
	err = p.Release(bg())
	n, _ := e.do(t, "EXISTS", holders, permits).AsInt64()
	assert.Zero(t, n, "semaphore, the common release: the permit is released (Release: %v)", err)
	assert.NoError(t, err, "semaphore, the common release")

	// The rare paths: a shared owner id (a latch), another reader, another
	// permit.
	rw := rwlock.New(c, name, rwlock.WithLease(aclLease))
	otherReader := rwlock.New(c, name, rwlock.WithLease(aclLease))
	for _, r := range []struct {
		label string
		l     redisync.Locker
		other redisync.Locker
	}{
		{"rlock, a shared owner id", rlock.New(c, name, rlock.WithLease(aclLease), rlock.WithOwner("svc")), nil},
		{"fairlock, a shared owner id", fairlock.New(c, name, fairlock.WithLease(aclLease), fairlock.WithOwner("svc")), nil},
		{"fairlock (Redisson queue), a shared owner id",
			fairlock.New(c, name, fairlock.WithLease(aclLease), fairlock.WithRedissonQueue(0), fairlock.WithOwner("svc")), nil},
		{"rwlock read, another reader", rw.ReadLocker(), otherReader.ReadLocker()},
	} {
		require.NoError(t, r.l.Lock(bg()), r.label)
		if r.other != nil {
			require.NoError(t, r.other.Lock(bg()), r.label)
		}
		e.do(t, "PERSIST", name)
		before := e.snapshot(t)
		err := r.l.Unlock(bg())
		assert.ErrorIs(t, err, redisync.ErrLockLost, r.label)
		assert.Empty(t, diff(before, e.snapshot(t)), "%s: the release left the hash without expiry alone", r.label)
		if r.other != nil {
			_ = r.other.Unlock(bg())
		}
		e.do(t, "DEL", name)
	}
	p, err = s.Acquire(bg(), 1)
	require.NoError(t, err)
	_, err = s.Acquire(bg(), 1)
	require.NoError(t, err)
	e.do(t, "PERSIST", holders)
	e.do(t, "PERSIST", permits)
	before := e.snapshot(t)
	err = p.Release(bg())
	assert.ErrorIs(t, err, errWrongKind, "semaphore, another permit")
	assert.Empty(t, diff(before, e.snapshot(t)), "semaphore, another permit: the release (%v) left the keys alone", err)
}

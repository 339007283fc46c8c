package rwlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// Issue 16 item 2: the names Redisson shares (channel, read-hold keys)
// follow Redisson's "contains '{'" rule for every name.

// TestBraceNamesUseRedissonsNames: for names with '{' but no effective hash
// tag, a Redisson reader's hold keys and channel are where redisync looks,
// so a Redisson read release sees redisync's reader and keeps the lock.
func TestBraceNamesUseRedissonsNames(t *testing.T) {
	e := setup(t)
	for _, name := range []string{"a{b", "{}x", "a{}b"} {
		java := javaClient{t: t, e: e, name: name, owner: "9a3c1f0e-1d2b-4c5d-8e7f-0a1b2c3d4e5f:12"}
		require.True(t, java.readLock(), name)
		rw := New(e.C, name)
		require.NoError(t, rw.RLock(bg()), name)
		assert.True(t, e.Exists(t, name+":"+rw.Owner()+":rwlock_timeout:1"), "%s: read-hold key in Redisson's place", name)
		java.readUnlock()
		assert.True(t, e.Exists(t, name), "%s: redisync's read hold keeps the lock", name)
		msgs := e.Subscribe(t, "redisson_rwlock:"+name, false)
		require.NoError(t, rw.RUnlock(bg()))
		select {
		case m := <-msgs:
			assert.Equal(t, "1", m)
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no release message on redisson_rwlock:%s", name, name)
		}
		e.WaitEmpty(t)
	}
}

// TestBraceNamesWithoutTagRefusedOnCluster: there Redisson's names for them
// are in other slots, so rwlock refuses them up front; tagged and plain
// names work.
func TestBraceNamesWithoutTagRefusedOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := redisync.New(cl.Client(t))
	t.Cleanup(func() { c.Close() })
	for _, name := range []string{"a{b", "{}x", "a{}b", "x}"} {
		err := New(c, name).Lock(bg())
		assert.ErrorIs(t, err, redisync.ErrInvalidName, name)
	}
	for _, name := range []string{"x", "{t}x", "a{b}c"} {
		rw := New(c, name)
		require.NoError(t, rw.Lock(bg()), name)
		require.NoError(t, rw.Unlock(bg()), name)
	}
}

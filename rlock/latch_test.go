package rlock

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/scripts"
)

// A release whose reply was lost is sent again as the same request: with a
// shared owner the latch replays the first outcome instead of taking a
// second hold, which would be the other handle's.
func TestRetriedReleaseOfASharedOwnerNeverDecrementsTwice(t *testing.T) {
	e := setup(t)
	const name = "mutex:latch-retry"
	a := New(e.C, name, WithOwner("svc:7"))
	b := New(e.C, name, WithOwner("svc:7"))
	require.NoError(t, a.Lock(bg()))
	require.NoError(t, b.Lock(bg()))
	args := scripts.ReleaseArgs{Expected: scripts.ReleaseAny, Token: a.Token(),
		Latch: scripts.Latch{Field: "redisync:latch:test-a", Req: "r1"}}
	for i := range 3 {
		r, err := a.release(bg(), args)
		require.NoError(t, err)
		assert.Equal(t, scripts.Released{Acted: true, Count: 1}, r, "send %d replays the first outcome", i+1)
	}
	n, err := b.HoldCount(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "b's hold survives a's retries")
	// A new request is a new release.
	args.Latch.Req = "r2"
	r, err := a.release(bg(), args)
	require.NoError(t, err)
	assert.Equal(t, scripts.Released{Acted: true, Count: 0}, r)
	assert.False(t, e.Exists(t, name))
}

// The undo of a shared owner's acquire acts only on that acquire: not when
// it never granted (and then the acquire, arriving late, refuses), and never
// twice.
func TestUndoOfASharedOwnersAcquireActsOnlyOnItsOwnGrant(t *testing.T) {
	e := setup(t)
	const name = "mutex:latch-undo"
	b := New(e.C, name, WithOwner("svc:8"))
	require.NoError(t, b.Lock(bg()))
	a := New(e.C, name, WithOwner("svc:8"))
	latch := scripts.Latch{Field: "redisync:latch:test-a", Req: "q1"}
	undo := scripts.ReleaseArgs{Expected: scripts.ReleaseUndo, Latch: latch}
	count := func() int {
		n, err := b.HoldCount(bg())
		require.NoError(t, err)
		return n
	}

	// Undo first (the acquire's reply was lost before it even ran).
	r, err := a.release(bg(), undo)
	require.NoError(t, err)
	assert.False(t, r.Acted)
	assert.Equal(t, 1, count(), "an undo without a grant takes nothing")
	res, err := scripts.LockAcquireLatched(bg(), e.RC, &a.keys, a.leaseMs, a.owner, false, latch)
	require.NoError(t, err)
	assert.False(t, res.OK, "the late acquire refuses")
	assert.Equal(t, 1, count())

	// Grant, then undo twice.
	latch.Req = "q2"
	undo.Latch = latch
	res, err = scripts.LockAcquireLatched(bg(), e.RC, &a.keys, a.leaseMs, a.owner, false, latch)
	require.NoError(t, err)
	require.True(t, res.OK)
	assert.Equal(t, 2, count())
	for range 2 {
		_, err = a.release(bg(), undo)
		require.NoError(t, err)
		assert.Equal(t, 1, count(), "the undo takes back exactly its grant, once")
	}
	require.NoError(t, b.Unlock(bg()))
	assert.False(t, e.Exists(t, name), "nothing left: %s", e.Describe(t))
}

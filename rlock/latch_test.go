package rlock

import (
	"testing"
	"time"

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

// A handle's latch field lives while the handle holds and goes with its
// last Unlock, though other handles of its owner still hold: a service
// that makes a handle per request under one owner id leaves the lock hash
// as small as the holds it has.
func TestLatchFieldGoesWithTheHandlesLastHold(t *testing.T) {
	e := setup(t)
	const name, owner = "mutex:latch-per-request", "svc:9"
	keeper := New(e.C, name, WithOwner(owner))
	require.NoError(t, keeper.Lock(bg()))
	fields := func() []string {
		keys, err := e.Do(t, "HKEYS", name).AsStrSlice()
		require.NoError(t, err)
		return keys
	}
	want := fields() // the owner's count, the token and keeper's latch
	for i := range 50 {
		h := New(e.C, name, WithOwner(owner))
		require.NoError(t, h.Lock(bg()))
		require.NoError(t, h.Lock(bg()), "nested")
		require.Len(t, fields(), len(want)+1, "handle %d's latch is there while it holds", i)
		require.NoError(t, h.Unlock(bg()))
		require.Len(t, fields(), len(want)+1, "handle %d still holds once", i)
		require.NoError(t, h.Unlock(bg()))
		require.ElementsMatch(t, want, fields(), "handle %d's last Unlock takes its latch field", i)
	}
	n, err := keeper.HoldCount(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the keeper's hold is left alone")
	require.NoError(t, keeper.Unlock(bg()))
	assert.False(t, e.Exists(t, name), "nothing left: %s", e.Describe(t))
}

// The release that ends a handle's last hold takes its latch field; sent
// again (its reply was lost), it finds no latch while the hold's token is
// still the lock's, and replays its outcome instead of taking another
// handle's hold.
func TestRetriedLastReleaseOfASharedOwnerNeverDecrementsTwice(t *testing.T) {
	e := setup(t)
	const name = "mutex:latch-last-retry"
	a := New(e.C, name, WithOwner("svc:10"))
	b := New(e.C, name, WithOwner("svc:10"))
	require.NoError(t, b.Lock(bg()))
	latch := scripts.Latch{Field: "redisync:latch:test-a", Req: "g1"}
	res, err := scripts.LockAcquireLatched(bg(), e.RC, &a.keys, a.leaseMs, a.owner, false, latch)
	require.NoError(t, err)
	require.True(t, res.OK)
	args := scripts.ReleaseArgs{Expected: scripts.ReleaseAny, Token: res.Token, Last: true,
		Latch: scripts.Latch{Field: latch.Field, Req: "r1"}}
	for i := range 3 {
		r, err := a.release(bg(), args)
		require.NoError(t, err)
		assert.Equal(t, scripts.Released{Acted: true, Count: 1}, r, "send %d replays the first outcome", i+1)
		assert.False(t, e.Int(t, "HEXISTS", name, latch.Field) == 1, "send %d: the latch field is gone", i+1)
	}
	n, err := b.HoldCount(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "b's hold survives a's retries")
	// A later hold of the owner carries another token: the old release
	// does not take it for its own.
	require.NoError(t, b.Unlock(bg()))
	require.NoError(t, b.Lock(bg()))
	r, err := a.release(bg(), args)
	require.NoError(t, err)
	assert.False(t, r.Acted, "a later hold is not the one released")
	n, err = b.HoldCount(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, b.Unlock(bg()))
}

// A handle's last Unlock while another goroutine's acquire on the handle is
// in flight (held back by CLIENT PAUSE WRITE): the acquire grants a new
// hold, which the handle's latch field records, so the ended hold's
// release, sent after it, leaves the field to the new hold, whose last
// release takes it. Had the first release taken it, the second would have
// written it back and left it in the hash for as long as other handles of
// the owner hold.
func TestLastUnlockDuringANewGrantLeavesTheLatchFieldToIt(t *testing.T) {
	e := setup(t)
	const name, owner = "mutex:latch-during-grant", "svc:10"
	keeper := New(e.C, name, WithOwner(owner))
	require.NoError(t, keeper.Lock(bg()))
	fields := func() []string {
		keys, err := e.Do(t, "HKEYS", name).AsStrSlice()
		require.NoError(t, err)
		return keys
	}
	want := fields() // the owner's count, the token and keeper's latch
	m := New(e.C, name, WithOwner(owner))
	require.NoError(t, m.Lock(bg()))
	require.NoError(t, e.Do(t, "CLIENT", "PAUSE", "300", "WRITE").Error())
	locked := make(chan error, 1)
	go func() { locked <- m.Lock(bg()) }()
	time.Sleep(100 * time.Millisecond) // the acquire waits in the pause
	require.NoError(t, m.Unlock(bg()), "the first hold's Unlock")
	require.NoError(t, <-locked)
	require.Len(t, fields(), len(want)+1, "the new hold's latch is there")
	require.NoError(t, m.Unlock(bg()), "the new hold's Unlock")
	assert.ElementsMatch(t, want, fields(), "the handle's last Unlock takes its latch field")
	n, err := keeper.HoldCount(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the keeper's hold is left alone: %s", e.Describe(t))
	require.NoError(t, keeper.Unlock(bg()))
	assert.False(t, e.Exists(t, name), "nothing left: %s", e.Describe(t))
}

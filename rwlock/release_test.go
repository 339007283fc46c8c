package rwlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
)

// Issue 12, defect 2, for both sides: Unlock and RUnlock with an ended ctx
// still release.
func TestRWUnlockWithAnEndedContextStillReleases(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(900*time.Millisecond))
	const name = "rw:unlock-ctx"
	ended, cancel := context.WithCancel(bg())
	cancel()
	rw := New(e.C, name)
	require.NoError(t, rw.Lock(bg()))
	err := rw.Unlock(ended)
	assert.True(t, err == nil || err == context.Canceled, "got %v", err)
	e.WaitEmpty(t)
	require.NoError(t, rw.RLock(bg()))
	err = rw.RUnlock(ended)
	assert.True(t, err == nil || err == context.Canceled, "got %v", err)
	e.WaitEmpty(t)
	other := New(e.Client(t), name)
	wctx, wcancel := context.WithTimeout(bg(), 5*time.Second)
	defer wcancel()
	require.NoError(t, other.Lock(wctx))
	require.NoError(t, other.Unlock(bg()))
}

// Issue 12, defect 5, for the write side: handles sharing an owner id each
// release their own hold.
func TestRWSharedOwnerHandlesEachReleaseTheirOwnHold(t *testing.T) {
	e := setup(t)
	const name = "rw:shared-owner"
	a := New(e.C, name, WithOwner("svc:3"))
	b := New(e.C, name, WithOwner("svc:3"))
	require.NoError(t, a.Lock(bg()))
	require.NoError(t, b.Lock(bg()))
	require.NoError(t, a.Unlock(bg()))
	assert.NoError(t, b.WriteLocker().Err())
	require.NoError(t, b.Unlock(bg()))
	e.WaitEmpty(t)
}

package fairlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
)

// Issue 12, defect 2, for the fair lock: Unlock with an ended ctx still
// releases, and the next waiter in the queue gets in.
func TestFairUnlockWithAnEndedContextStillReleases(t *testing.T) {
	e := setup(t, redisync.WithWatchdogTimeout(900*time.Millisecond))
	const name = "fair:unlock-ctx"
	m := New(e.C, name)
	require.NoError(t, m.Lock(bg()))
	ctx, cancel := context.WithCancel(bg())
	cancel()
	err := m.Unlock(ctx)
	assert.True(t, err == nil || err == context.Canceled, "got %v", err)
	select {
	case <-m.Done():
	default:
		t.Fatal("the hold did not end locally at once")
	}
	other := New(e.Client(t), name)
	wctx, wcancel := context.WithTimeout(bg(), 5*time.Second)
	defer wcancel()
	require.NoError(t, other.Lock(wctx))
	require.NoError(t, other.Unlock(bg()))
	e.WaitEmpty(t)
}

// Issue 12, defect 5, for the fair lock: handles sharing an owner id each
// release their own hold.
func TestFairSharedOwnerHandlesEachReleaseTheirOwnHold(t *testing.T) {
	e := setup(t)
	const name = "fair:shared-owner"
	a := New(e.C, name, WithOwner("svc:2"))
	b := New(e.C, name, WithOwner("svc:2"))
	require.NoError(t, a.Lock(bg()))
	require.NoError(t, b.Lock(bg()))
	require.NoError(t, a.Unlock(bg()))
	assert.NoError(t, b.Err())
	require.NoError(t, b.Unlock(bg()))
	e.WaitEmpty(t)
}

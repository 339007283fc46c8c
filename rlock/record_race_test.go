package rlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
)

// A hold released while its first renewal is in flight: the renewal round
// then writes the holder record (holder_record.lua, HSETNX) after the
// release, which was sent without the holder-info key (Unrecorded). The
// record of a hold that has ended stays for RecordTTL (eight leases), and a
// later hold of the same handle (same owner field) inherits it: Holders
// shows Info before lease/3 with the old hold's Started. HolderInfo's doc:
// "a new hold after a full release gets a new one" and "the field goes when
// the owner's hold count reaches zero".
func TestAReleaseDuringTheFirstRenewalLeavesNoRecord(t *testing.T) {
	const lease = 3 * time.Second
	e := setup(t, redisync.WithWatchdogTimeout(lease))
	name := "hw:record-race"
	info, _ := keys.Derived(keys.HolderInfoPrefix, name)
	m := New(e.C, name)
	t0 := time.Now()
	require.NoError(t, m.Lock(bg()))
	// The first renewal goes at lease/3 (1 s): hold the server's writes
	// from 0.8 s to 1.6 s, so it waits there, and Unlock at 1.3 s, behind it.
	time.Sleep(time.Until(t0.Add(800 * time.Millisecond)))
	e.Do(t, "CLIENT", "PAUSE", "800", "WRITE")
	time.Sleep(time.Until(t0.Add(1300 * time.Millisecond)))
	require.NoError(t, m.Unlock(bg()))
	time.Sleep(300 * time.Millisecond)
	require.False(t, e.Exists(t, name), "lock released")
	fields, err := e.Do(t, "HGETALL", info).AsStrMap()
	require.NoError(t, err)
	require.Empty(t, fields, "a released hold's record is left (PTTL %d ms): %v", e.PTTL(t, info), fields)
}

// The same race seen by the reader: the handle locks again at once, and its
// new hold shows the old hold's record before its own first renewal.
func TestANewHoldAfterAReleaseDuringTheFirstRenewalShowsNoOldRecord(t *testing.T) {
	const lease = 3 * time.Second
	e := setup(t, redisync.WithWatchdogTimeout(lease))
	name := "hw:record-race-2"
	m := New(e.C, name)
	t0 := time.Now()
	require.NoError(t, m.Lock(bg()))
	time.Sleep(time.Until(t0.Add(800 * time.Millisecond)))
	e.Do(t, "CLIENT", "PAUSE", "800", "WRITE")
	time.Sleep(time.Until(t0.Add(1300 * time.Millisecond)))
	require.NoError(t, m.Unlock(bg()))
	time.Sleep(300 * time.Millisecond)
	t1 := time.Now()
	require.NoError(t, m.Lock(bg()))
	defer func() { require.NoError(t, m.Unlock(bg())) }()
	hs, err := m.Holders(bg())
	require.NoError(t, err)
	require.Len(t, hs, 1)
	if time.Since(t1) < lease/3 && hs[0].Info != nil {
		t.Fatalf("a new hold shows a record before its first renewal: Started %v (the earlier hold began %v, this one %v)", hs[0].Info.Started, t0, t1)
	}
}

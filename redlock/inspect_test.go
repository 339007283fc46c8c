package redlock

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
)

// Inspection is a quorum view: a value holds the lock when a majority of
// the nodes carry it; a dead node counts for nobody.
func TestInspectionIsAQuorumView(t *testing.T) {
	// The holder record comes with the first renewal, a third of the lease
	// after the grant.
	ms := startMasters(t, 3, redisync.WithLabel("quorum"), redisync.WithWatchdogTimeout(1500*time.Millisecond))
	m := New(ms.clients, "inspect:quorum")
	require.NoError(t, m.Lock(bg()))
	for _, rc := range ms.raw {
		locktest.AwaitRecord(t, rc, "inspect:quorum", m.holdValue(), 10*time.Second)
	}

	hs, err := m.Holders(bg())
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, 3, hs[0].Count)
	assert.True(t, strings.HasPrefix(hs[0].Owner, m.owner+":"), hs[0].Owner)
	require.NotNil(t, hs[0].Info)
	assert.Equal(t, "quorum", hs[0].Info.Label)
	n, err := m.HoldCount(bg())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	ttl, err := m.TTL(bg())
	require.NoError(t, err)
	assert.Positive(t, ttl)

	// A value on one node only (a minority) holds nothing.
	redistest.Do(t, ms.raw[0], "SET", "inspect:minority", "someone:1", "PX", "60000")
	other, err := New(ms.clients, "inspect:minority").IsLocked(bg())
	require.NoError(t, err)
	assert.False(t, other)

	ms.srv[2].Kill()
	hs, err = m.Holders(bg())
	require.NoError(t, err)
	require.Len(t, hs, 1, "two of three nodes still carry it")
	assert.Equal(t, 2, hs[0].Count)

	ok, err := m.ForceUnlock(bg())
	assert.True(t, ok)
	assert.Error(t, err, "the dead node's error is reported")
	locked, err := m.IsLocked(bg())
	require.NoError(t, err)
	assert.False(t, locked)
	for i := range 2 {
		n, err := ms.raw[i].Do(bg(), ms.raw[i].B().Exists().Key("inspect:quorum").Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "node %d", i)
	}
}

// IsLocked, HoldCount and TTL show no holder records, so they read none:
// one script per node, no HGET or HGETALL of the holder-info hash. Holders
// reads the holder's own record (HGET of its field), not the whole hash.
func TestOnlyHoldersReadsTheHolderRecord(t *testing.T) {
	ms := startMasters(t, 3, redisync.WithLabel("records"))
	// A fixed lease: no renewal runs a script (whose calls commandstats
	// would count) while the test counts, once the watchdog's timer wrote
	// the record (a third of the lease after the grant).
	m := New(ms.clients, "inspect:records", WithLease(4500*time.Millisecond))
	require.NoError(t, m.Lock(bg()))
	for _, rc := range ms.raw {
		locktest.AwaitRecord(t, rc, "inspect:records", m.holdValue(), 10*time.Second)
	}
	defer func() { require.NoError(t, m.Unlock(bg())) }()
	reads := func() (hget, hgetall int64) {
		for _, rc := range ms.raw {
			hget += redistest.CommandCalls(t, rc, "hget")
			hgetall += redistest.CommandCalls(t, rc, "hgetall")
		}
		return hget, hgetall
	}
	hget0, hgetall0 := reads()
	_, err := m.IsLocked(bg())
	require.NoError(t, err)
	_, err = m.HoldCount(bg())
	require.NoError(t, err)
	_, err = m.TTL(bg())
	require.NoError(t, err)
	hget1, hgetall1 := reads()
	assert.Equal(t, hget0, hget1, "IsLocked, HoldCount and TTL read a record")
	assert.Equal(t, hgetall0, hgetall1, "IsLocked, HoldCount and TTL read the records")
	hs, err := m.Holders(bg())
	require.NoError(t, err)
	require.Len(t, hs, 1)
	require.NotNil(t, hs[0].Info)
	assert.Equal(t, "records", hs[0].Info.Label)
	hget2, hgetall2 := reads()
	assert.Equal(t, hget1+3, hget2, "Holders reads the holder's record on each node")
	assert.Equal(t, hgetall1, hgetall2, "Holders reads the whole holder-info hash")
}

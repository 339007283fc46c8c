package redlock

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// Inspection is a quorum view: a value holds the lock when a majority of
// the nodes carry it; a dead node counts for nobody.
func TestInspectionIsAQuorumView(t *testing.T) {
	ms := startMasters(t, 3, redisync.WithLabel("quorum"))
	m := New(ms.clients, "inspect:quorum")
	require.NoError(t, m.Lock(bg()))

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

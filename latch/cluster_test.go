package latch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// On a Redis Cluster the latch publishes with SPUBLISH on its key's node
// and the waiters listen with SSUBSCRIBE; names with a '}', whose Redisson
// channel is in another slot, are refused up front ("a{b" is not: its
// channel's tag is the whole name).
func TestClusterUsesShardedPubSubInTheKeysSlot(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := redisync.New(cl.Client(t), redisync.WithMaxPoll(30*time.Second))
	t.Cleanup(func() { c.Close() })
	for _, name := range []string{"{t}x", "x}", "{}x", "a{b}c"} {
		_, err := New(c, name).TrySetCount(bg(), 1)
		assert.ErrorIs(t, err, redisync.ErrInvalidName, name)
	}

	for _, name := range []string{"a{b", "plain"} {
		_, err := New(c, name).Count(bg())
		require.NoError(t, err, name)
	}
	const name = "cluster:latch"
	channel, ok := keys.LatchChannel(name)
	require.True(t, ok)
	node := cl.NodeFor(name)
	l := New(c, name)
	ok, err := l.TrySetCount(bg(), 2)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, l.CountDown(bg()))
	done := make(chan error, 1)
	go func() { done <- l.Await(bg()) }()
	nrc := node.Client(t)
	eventually(t, 10*time.Second, func() bool {
		vals, err := redistest.Do(t, nrc, "PUBSUB", "SHARDNUMSUB", channel).ToArray()
		if err != nil || len(vals) != 2 {
			return false
		}
		n, _ := vals[1].AsInt64()
		return n == 1
	}, "the waiter's SSUBSCRIBE on the key's node")
	before := redistest.CommandCalls(t, nrc, "spublish")
	require.NoError(t, New(c, name).CountDown(bg()))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken (the poll is 30 s)")
	}
	assert.Greater(t, redistest.CommandCalls(t, nrc, "spublish"), before, "SPUBLISH on the key's node")
	n, err := redistest.Do(t, nrc, "EXISTS", name).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "the key gone at zero")
}

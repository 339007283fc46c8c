package ratelimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// On a Redis Cluster every identity's key lives in the identity's slot
// (its hash tag, else itself), so identities spread over the nodes and
// every string works: a tagged key, braces without a tag, a '}'.
func TestClusterKeepsEachIdentityInItsSlot(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := redisync.New(cl.Client(t))
	t.Cleanup(func() { c.Close() })
	l := New(c, "api", Every(time.Hour), 2)
	nodes := map[string]bool{}
	for _, key := range []string{"user:1", "user:2", "user:3", "user:4", "user:5", "{t}x", "a{b", "x}", "{}"} {
		res, err := l.AllowN(bg(), key, 2)
		require.NoError(t, err, key)
		assert.Equal(t, 2, res.Allowed, key)
		res, err = l.Allow(bg(), key)
		require.NoError(t, err, key)
		assert.Equal(t, 0, res.Allowed, "%s: the burst is spent", key)
		k := keys.Rate("api", key)
		node := cl.NodeFor(k)
		nodes[node.Addr()] = true
		n, err := node.Client(t).Do(bg(), node.Client(t).B().Exists().Key(k).Build()).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "%s: the key is on its slot's node", key)
		if tag, ok := keys.HashTag(key); ok {
			assert.Equal(t, keys.Slot(tag), keys.Slot(k), key)
		}
	}
	assert.Greater(t, len(nodes), 1, "identities spread over the nodes")
}

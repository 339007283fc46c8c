package ratelimit

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// A replica promoted after its master died keeps the schedules it
// received: a key that spent its burst on the master is still limited
// there, and its key still expires at the TAT (SET PX travels as an
// absolute expiry).
func TestFailoverToAReplicaKeepsTheLimit(t *testing.T) {
	master := redistest.StartArgs(t, "--repl-diskless-sync-delay", "0") // a full sync at once
	host, port, _ := strings.Cut(master.Addr(), ":")
	replica := redistest.StartArgs(t, "--replicaof", host, port)
	rc := master.Client(t)
	eventually(t, 10*time.Second, func() bool {
		info, _ := redistest.Do(t, rc, "INFO", "replication").ToString()
		return strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online")
	}, "the replica is in sync")
	c := redisync.New(rc, redisync.WithWaitReplicas(1, 2*time.Second))
	t.Cleanup(func() { c.Close() })
	l := New(c, "fo", Every(time.Hour), 3)
	res, err := l.AllowN(bg(), "k", 3)
	require.NoError(t, err, "acknowledged by the replica")
	require.Equal(t, 3, res.Allowed)

	master.Kill()
	rrc := replica.Client(t)
	redistest.Do(t, rrc, "REPLICAOF", "NO", "ONE")
	pc := redisync.New(rrc)
	t.Cleanup(func() { pc.Close() })
	promoted := New(pc, "fo", Every(time.Hour), 3)
	res, err = promoted.Allow(bg(), "k")
	require.NoError(t, err)
	assert.Equal(t, 0, res.Allowed, "the burst spent on the master stays spent")
	assert.InDelta(t, float64(time.Hour), float64(res.RetryAfter), float64(5*time.Second))
	pttl, err := rrc.Do(bg(), rrc.B().Pttl().Key(keys.Rate("fo", "k")).Build()).AsInt64()
	require.NoError(t, err)
	assert.InDelta(t, (3 * time.Hour).Milliseconds(), pttl, 5000, "the key expires at the TAT on the replica too")
}

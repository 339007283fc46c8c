package latch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/rlock"
)

// TestNotReplicatedSaysWhatItIsAbout: with WaitReplicas and a replica that
// does not acknowledge (here: none is connected, as when the only replica
// is stalled), the errors name the latch or the lock and the operation; and
// TrySetCount reports the latch it created on the master (true, with the
// error), so that a retry is not told that someone else set it.
func TestNotReplicatedSaysWhatItIsAbout(t *testing.T) {
	e := locktest.Setup(t, redisync.WithWaitReplicas(1, 50*time.Millisecond))
	l := New(e.C, "repl:latch")
	ok, err := l.TrySetCount(bg(), 3)
	require.ErrorIs(t, err, redisync.ErrNotReplicated)
	assert.Contains(t, err.Error(), `latch "repl:latch": setting the count`)
	assert.True(t, ok, "the latch was created on the master: %v", err)
	n, err := l.Count(bg())
	require.NoError(t, err, "a read has no WAIT")
	assert.Equal(t, int64(3), n)

	err = l.CountDown(bg())
	require.ErrorIs(t, err, redisync.ErrNotReplicated)
	assert.Contains(t, err.Error(), `latch "repl:latch": counting down`)

	_, err = rlock.New(e.C, "repl:lock").TryLock(bg())
	require.ErrorIs(t, err, redisync.ErrNotReplicated)
	assert.Contains(t, err.Error(), `rlock "repl:lock"`)
}

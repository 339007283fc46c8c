package deploytest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// stallingPart is a multilock component whose TryLock stops the replica
// and ends the caller's ctx, and reports that end: the replica lags, and
// the multilock's Lock gives up, right after an earlier component was
// taken (a deterministic stand-in for a replica stalling mid-round).
type stallingPart struct {
	redisync.Locker // unused methods
	stall           func()
}

func (p *stallingPart) TryLock(ctx context.Context) (bool, error) {
	p.stall()
	<-ctx.Done()
	return false, ctx.Err()
}

// A multilock whose round gives up gives back the components it took
// without a WAIT (engine.Undo), like every other undo: nobody reads a
// replica's acknowledgement of it. With one (engine.Background), behind a
// lagging replica, the release of the component held back the cancelled
// Lock for half of the undo's 2 s bound per component taken.
func TestWaitReplicasMultilockRoundUndoesWithoutWait(t *testing.T) {
	master, replica := startReplicated(t)
	raw := master.Client(t)
	c := redisync.New(master.Client(t), redisync.WithWaitReplicas(1, 5*time.Second))
	defer c.Close()
	a := rlock.New(c, "mlundo:a")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	paused := false
	defer func() {
		if paused {
			replica.Resume()
		}
	}()
	var cancelled time.Time
	part := &stallingPart{stall: func() {
		replica.Pause()
		paused = true
		cancelled = time.Now()
		cancel()
	}}
	err := multilock.New(a, part).Lock(ctx)
	took := time.Since(cancelled)
	require.ErrorIs(t, err, context.Canceled)
	t.Logf("the multilock returned %v after its ctx ended", took)
	// Without a WAIT the release of a is one round trip on loopback; with
	// one it waits for the stopped replica for 1 s at least (half of
	// engine.CompensateTimeout), which it cannot end early. 500 ms is many
	// times a loaded machine's round trip and half that WAIT.
	assert.Less(t, took, 500*time.Millisecond, "the cancelled Lock returns at once (its undo waits for no replica)")
	n, err := redistest.Do(t, raw, "EXISTS", "mlundo:a").AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "a was given back")
}

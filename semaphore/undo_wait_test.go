package semaphore

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/stretchr/testify/require"
)

// A cancelled Acquire against a server that does not answer waits once,
// within redisync.UndoWait, for both of its undos: the give-back of its
// attempt in flight and its leave of the queue (hold.Config.UndoAfter: the
// attempt leaves its wait to the leave's, which comes after it). Waiting
// for each in turn would take twice UndoWait: the bound below leaves the
// scheduler most of UndoWait on top of the one wait.
func TestCancelledAcquireWaitsOnceForItsUndosWhileTheServerStalls(t *testing.T) {
	e := setup(t)
	s := New(e.C, "sem:undo-wait", 1)
	p, err := s.Acquire(bg(), 1) // the scripts' digests are learned
	require.NoError(t, err)
	require.NoError(t, p.Release(bg()))
	e.Srv.Pause()
	defer e.Srv.Resume()
	ctx, cancel := context.WithTimeout(bg(), 100*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	_, err = s.Acquire(ctx, 1)
	late := time.Since(deadline)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, late, 2*redisync.UndoWait-25*time.Millisecond, "the cancelled Acquire waited for its undos one after the other")
	t.Logf("returned %v after its deadline", late)
}

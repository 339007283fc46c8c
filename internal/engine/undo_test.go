package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/redistest"
)

func newEngine(t *testing.T) *engine.Engine {
	e := engine.New(redistest.Start(t).Client(t), engine.Config{MaxPoll: time.Second})
	t.Cleanup(e.Close)
	return e
}

// sends answers false (no reply) n times, then true, and counts the sends.
func sends(n int32, count *atomic.Int32) func(context.Context) bool {
	return func(ctx context.Context) bool {
		if _, ok := ctx.Deadline(); !ok {
			panic("a send without its bound")
		}
		return count.Add(1) > n
	}
}

// TestPersistSendsUntilAnsweredAndConfirmsAfterAMiss: an undo is sent
// again until it is answered; with confirm, one more send follows the
// first answer after a miss (an acquire on a dropped connection may land
// after the undo), and none follows an answer at the first send.
func TestPersistSendsUntilAnsweredAndConfirmsAfterAMiss(t *testing.T) {
	e := newEngine(t)
	until := time.Now().Add(time.Minute)
	for _, c := range []struct {
		misses  int32
		confirm bool
		want    int32
	}{{0, true, 1}, {0, false, 1}, {2, false, 3}, {2, true, 4}} {
		var n atomic.Int32
		e.Persist(context.Background(), until, c.confirm, sends(c.misses, &n))
		assert.Equal(t, c.want, n.Load(), "%d misses, confirm %v", c.misses, c.confirm)
	}
}

// TestPersistStopsWhenTheUndoCannotMatter: past until (the lease or the
// waiter timeout has ended what it undoes) no more sends go out.
func TestPersistStopsWhenTheUndoCannotMatter(t *testing.T) {
	e := newEngine(t)
	var n atomic.Int32
	start := time.Now()
	e.Persist(context.Background(), start.Add(500*time.Millisecond), true, sends(1<<30, &n))
	took := time.Since(start)
	assert.Less(t, took, 600*time.Millisecond)
	assert.Greater(t, n.Load(), int32(2), "sent again within the bound")
}

// TestPersistIsGivenUpByClose: Close gives up an undo still being sent
// (within CloseTimeout), and one that starts on a closed Client sends once.
func TestPersistIsGivenUpByClose(t *testing.T) {
	e := newEngine(t)
	var n atomic.Int32
	e.Go(func() { e.Persist(context.Background(), time.Now().Add(time.Minute), true, sends(1<<30, &n)) })
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	e.Close()
	assert.Less(t, time.Since(start), engine.CloseTimeout+100*time.Millisecond)
	sent := n.Load()
	time.Sleep(1500 * time.Millisecond) // past the longest pace
	assert.Equal(t, sent, n.Load(), "sent after Close gave it up")

	var once atomic.Int32
	e.Persist(context.Background(), time.Now().Add(time.Minute), true, sends(1<<30, &once))
	assert.Equal(t, int32(1), once.Load(), "sends on a closed Client")
}

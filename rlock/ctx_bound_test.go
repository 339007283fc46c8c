package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redisync/redisync"
)

// TestLockReturnsWhenCtxEndsWhileAnUndoRuns: a Lock waiting on a busy lock
// whose server dies meets a transport error; the undo of that attempt (its
// reply never came, so it may have granted) runs as a Client task against
// the dead server for up to the settle bound. Lock retries transient errors
// within ctx, and its next attempt must wait for that undo — but only as
// long as ctx allows. Before, the wait ignored ctx: Lock returned
// DeadlineExceeded up to the settle bound (~2 s) after its deadline.
func TestLockReturnsWhenCtxEndsWhileAnUndoRuns(t *testing.T) {
	e := setup(t)
	const name = "mutex:ctx-bound"
	holder := New(e.C, name)
	if err := holder.Lock(bg()); err != nil {
		t.Fatal(err)
	}
	waiter := New(e.Client(t), name)
	const wait = 1500 * time.Millisecond
	ctx, cancel := context.WithTimeout(bg(), wait)
	defer cancel()
	errc := make(chan error, 1)
	start := time.Now()
	go func() { errc <- waiter.Lock(ctx) }()
	time.Sleep(300 * time.Millisecond)
	e.Srv.Kill()
	err := <-errc
	late := time.Since(start) - wait
	t.Logf("Lock returned %v after its deadline: %v", late, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	// The bound: redisync.UndoWait (Lock waits that long for the undo it
	// leaves to a Client task) and a scheduling slice on a loaded machine,
	// far below the settle bound (2 s) that the wait used to add.
	assert.Less(t, late, redisync.UndoWait+700*time.Millisecond, "Lock outlived its ctx")
}

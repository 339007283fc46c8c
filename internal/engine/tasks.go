package engine

import (
	"sync"
	"time"
)

// taskGroup counts the Client's background tasks so that Close can wait for
// them. Unlike a sync.WaitGroup it may gain a task while Close is waiting —
// a task that a caller hands over during Close (the undo of an acquire that
// met the closing Client) — and then waits for that one too. A WaitGroup
// forbids an Add from zero concurrent with Wait (the race detector caught
// it in the fault harness: a worker crashed, closing its Client, while
// another of its calls handed an undo to the Client).
type taskGroup struct {
	mu   sync.Mutex
	n    int
	zero *sync.Cond // signalled when n drops to 0
}

func (g *taskGroup) add() {
	g.mu.Lock()
	g.n++
	g.mu.Unlock()
}

func (g *taskGroup) done() {
	g.mu.Lock()
	g.n--
	if g.n == 0 && g.zero != nil {
		g.zero.Broadcast()
	}
	g.mu.Unlock()
}

// idle reports whether no task is running.
func (g *taskGroup) idle() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n == 0
}

// waitFor returns once no task is running (true), or when d has passed
// with tasks still running (false); d < 0 waits as long as it takes.
func (g *taskGroup) waitFor(d time.Duration) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.zero == nil {
		g.zero = sync.NewCond(&g.mu)
	}
	expired := false
	if d >= 0 {
		t := time.AfterFunc(d, func() {
			g.mu.Lock()
			expired = true
			g.zero.Broadcast()
			g.mu.Unlock()
		})
		defer t.Stop()
	}
	for g.n > 0 && !expired {
		g.zero.Wait()
	}
	return g.n == 0
}

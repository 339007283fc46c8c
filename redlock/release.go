package redlock

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/scripts"
)

// minReleaseWait is the shortest time Unlock waits for the nodes' replies
// to a release (it waits the node timeout when that is longer); ctx ending
// stops the wait sooner. Nodes still to answer are awaited by a Client task.
const minReleaseWait = 100 * time.Millisecond

func (m *Mutex) releaseWait() time.Duration { return max(m.nodeTimeout, minReleaseWait) }

// release sends the owner-checked release to the nodes idx in parallel and
// waits for the replies until ctx ends or wait has passed. The releases run
// with a context ctx's end does not cancel (bounded by
// engine.CompensateTimeout): a release is always sent, and never abandoned
// in flight. It returns one error per node (nil for nodes not in idx; for a
// node still to answer ErrNodeTimeout, or ctx.Err() if ctx ended), and,
// when some node is still to answer, rest, which awaits those replies. The
// caller holds op and must keep it until rest has returned (see freeOpAfter):
// a late release must not meet this handle's next acquire, since both act
// on the same owner's key. deleted counts the nodes that replied in time
// and had this owner's key.
func (m *Mutex) release(ctx context.Context, idx []int, wait time.Duration) (errs []error, deleted int, rest func()) {
	type result struct {
		i   int
		ok  bool
		err error
	}
	results := make(chan result, len(idx))
	for _, i := range idx {
		n := m.nodes[i]
		go func() { // its result is received below or by rest
			rctx, cancel := engine.Background(ctx)
			defer cancel()
			ok, err := scripts.RedlockRelease(rctx, n.e.RC, &n.keys, m.owner)
			results <- result{i, ok, err}
		}()
	}
	errs = make([]error, len(m.nodes))
	replied := make([]bool, len(m.nodes))
	pending := len(idx)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for waiting := true; waiting && pending > 0; {
		select {
		case r := <-results:
			errs[r.i], replied[r.i] = r.err, true
			if r.ok && r.err == nil {
				deleted++
			}
			pending--
		case <-timer.C:
			waiting = false
		case <-ctx.Done():
			waiting = false
		}
	}
	if pending == 0 {
		return errs, deleted, nil
	}
	late := ErrNodeTimeout
	if ctx.Err() != nil {
		late = ctx.Err()
	}
	for _, i := range idx {
		if !replied[i] {
			errs[i] = late
		}
	}
	return errs, deleted, func() {
		for range pending {
			<-results
		}
	}
}

// allNodes lists every node's index.
func (m *Mutex) allNodes() []int {
	idx := make([]int, len(m.nodes))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// lockOp takes op, the handle's one-operation-at-a-time token, waiting no
// longer than ctx (a Client task may hold it while it finishes a release).
func (m *Mutex) lockOp(ctx context.Context) error {
	select {
	case m.op <- struct{}{}:
		return nil
	default:
	}
	select {
	case m.op <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Mutex) unlockOp() { <-m.op }

// freeOpAfter frees op now, or, when replies are still owed (rest is not
// nil), in a task the first Client owns once they are in.
func (m *Mutex) freeOpAfter(rest func()) {
	if rest == nil {
		m.unlockOp()
		return
	}
	m.e0.Go(func() {
		defer m.unlockOp()
		rest()
	})
}

package redlock

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/scripts"
)

// minReleaseWait is the shortest time Unlock waits for the nodes' replies
// to a release (it waits the node timeout when that is longer); ctx ending
// stops the wait sooner. Nodes still to answer are awaited by a Client task.
const minReleaseWait = 100 * time.Millisecond

func (m *Mutex) releaseWait() time.Duration { return max(m.nodeTimeout, minReleaseWait) }

// release sends the owner-checked release of the key value to the nodes
// idx in parallel and waits for the replies until ctx ends or wait has
// passed, but not for nodes that are stalled (see nodeState.stalled).
// The releases run with a context ctx's end does not cancel
// (bounded by engine.CompensateTimeout, and by Close giving up the first
// Client's tasks): a release is always sent, and
// never abandoned in flight. It returns one error per node (nil for nodes
// not in idx; for a node still to answer ErrNodeTimeout, or ctx.Err() if
// ctx ended), and, when some node is still to answer, rest, which awaits
// those replies (see awaitLate). A late release deletes nothing but the
// key of the round value names, so nothing else waits for it.
func (m *Mutex) release(ctx context.Context, idx []int, value string, wait time.Duration) (errs []error, rest func()) {
	return m.releaseKeys(ctx, idx, value, wait, true)
}

// releaseKeys is release; with records false the nodes' scripts are given
// no holder-info hash (the hold wrote no record: scripts.ReleaseArgs'
// Unrecorded).
func (m *Mutex) releaseKeys(ctx context.Context, idx []int, value string, wait time.Duration, records bool) (errs []error, rest func()) {
	type result struct {
		i   int
		err error
	}
	results := make(chan result, len(idx))
	now := time.Now()
	awaited := 0 // replies waited for: not those of stalled nodes
	stalled := make([]bool, len(m.nodes))
	for _, i := range idx {
		stalled[i] = m.nodes[i].state.stalled(now, m.nodeTimeout)
		if !stalled[i] {
			awaited++
		}
		m.nodes[i].state.sent(now)
	}
	for _, i := range idx {
		n := m.nodes[i]
		go func() { // its result is received below or by rest
			rctx, cancel := m.e0.Background(ctx) // ends when the task's Client gives it up
			defer cancel()
			k := n.keys
			if !records {
				k.Info = ""
			}
			_, err := scripts.RedlockRelease(rctx, n.e.RC, &k, value)
			n.state.returned(time.Now(), err == nil || scripts.IsReply(err))
			results <- result{i, err}
		}()
	}
	errs = make([]error, len(m.nodes))
	replied := make([]bool, len(m.nodes))
	pending := len(idx)
	// A stall of this process is not charged to the nodes (see nodeWait),
	// up to four times wait in all.
	w := newNodeWait(wait, 4*wait)
	defer w.stop()
	for waiting := true; waiting && awaited > 0; {
		select {
		case r := <-results:
			errs[r.i], replied[r.i] = r.err, true
			pending--
			if !stalled[r.i] {
				awaited--
			}
		case <-w.C():
			waiting = !w.expired()
		case <-ctx.Done():
			waiting = false
		}
	}
	if pending == 0 {
		return errs, nil
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
	return errs, func() {
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
// longer than ctx.
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

// awaitLate awaits the replies rest still owes in a task the first Client
// owns (Close waits for it); nothing when rest is nil.
func (m *Mutex) awaitLate(rest func()) {
	if rest != nil {
		m.e0.Go(rest)
	}
}

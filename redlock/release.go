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
	f := sendKept(ctx, m.e0, m.nodes, idx, m.nodeTimeout, func(ctx context.Context, n *node) (bool, error) {
		k := n.keys
		if !records {
			k.Info = ""
		}
		return scripts.RedlockRelease(ctx, n.e.RC, &k, value)
	})
	// A stall of this process is not charged to the nodes (see nodeWait),
	// up to four times wait in all.
	f.wait(ctx, wait, 4*wait, nil)
	late := ErrNodeTimeout
	if ctx.Err() != nil {
		late = ctx.Err()
	}
	return f.errs(late), f.rest()
}

// awaitLate awaits the replies rest still owes in a task the first Client
// owns (Close waits for it); nothing when rest is nil.
func (m *Mutex) awaitLate(rest func()) {
	if rest != nil {
		m.e0.Go(rest)
	}
}

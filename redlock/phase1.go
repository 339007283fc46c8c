package redlock

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/scripts"
)

// phase1 is the acquire fan-out of one round (a sendKept flight: an
// acquire is never abandoned in flight, or it could leave an orphan that
// no one renews or releases). The round stops waiting at the node timeout
// or when ctx ends, and a reply that comes later is handled by settleLate.
type phase1 = flight[scripts.RedlockGrant]

// mayHold reports whether the node may hold the round's key after its
// phase-1 reply r: it granted, or the outcome is unknown (an error: the
// script may have run before it failed, or the reply was lost).
func mayHold(r reply[scripts.RedlockGrant]) bool { return r.err != nil || r.v.Granted }

// sendAcquires starts phase 1 on every node, for the round's key value.
func (m *Mutex) sendAcquires(ctx context.Context, value string) *phase1 {
	return sendKept(ctx, m.e0, m.nodes, m.nodes.all(), m.nodeTimeout, func(ctx context.Context, n *node) (scripts.RedlockGrant, error) {
		return scripts.RedlockAcquire(ctx, n.e.RC, &n.keys, value, m.leaseMs)
	})
}

// settleLate undoes what phase 1 left behind, in a task the first Client
// owns (Close waits for it): it awaits the replies still owed and releases
// the round's key (value) on each node that granted late (or whose outcome
// is unknown) — and, with alsoReplied, on each node that replied so. Each
// undo goes to a node only after that node's acquire has answered or
// failed. A failed acquire may still run: it went out on a connection that
// was dropped (a timeout), whose bytes a stopped server reads when it
// resumes, after the release sent on a new connection. So a release the
// node does not answer is sent again (engine.Persist) until the lease would
// have ended the grant anyway, and a node whose acquire failed gets one
// more release after its first answer: the value is this round's alone, so
// a release that finds nothing does nothing. A late node is never part of
// a hold (the hold is fenced on nodes that replied in time), so the task
// needs nothing from the handle: the handle's next round and its releases
// go on meanwhile.
func (m *Mutex) settleLate(p *phase1, value string, alsoReplied bool) {
	var undo, unknown []int
	if alsoReplied {
		for i, ok := range p.replied {
			if ok && mayHold(p.got[i]) {
				undo = append(undo, i)
				if p.got[i].err != nil {
					unknown = append(unknown, i)
				}
			}
		}
	}
	pending := p.pending
	if pending == 0 && len(undo) == 0 {
		return
	}
	m.e0.Go(func() {
		for range pending {
			if r := p.next(); mayHold(r) {
				undo = append(undo, r.i)
				if r.err != nil {
					unknown = append(unknown, r.i)
				}
			}
		}
		if len(undo) == 0 {
			return
		}
		confirmed := false
		m.e0.Persist(context.Background(), time.Now().Add(m.lease), false, func(ctx context.Context) bool {
			if len(undo) == 0 { // every node answered: confirm where the acquire failed
				undo, confirmed = unknown, true
			}
			// Wait for every reply: the releases are this task's to await.
			errs, rest := m.release(ctx, undo, value, 2*engine.CompensateTimeout)
			if rest != nil {
				rest()
			}
			var left []int
			for _, i := range undo {
				if err := errs[i]; engine.Resend(err) { // ErrNodeTimeout too: rest awaited that reply, errs kept the timeout
					left = append(left, i)
				}
			}
			undo = left
			return len(undo) == 0 && (confirmed || len(unknown) == 0)
		})
	})
}

package redlock

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/scripts"
)

// phase1 is the acquire fan-out of one attempt. An acquire is never
// abandoned in flight: a command given up on may still run on its node after
// the undo sent on another connection, and leave an orphan that no one
// renews or releases (the rule engine.Settle gives rlock). So every node's
// acquire runs with a context the caller's ctx does not cancel (bounded by
// engine.CompensateTimeout); the attempt stops waiting at the node timeout or
// when ctx ends, and a reply that comes later is handled by settleLate.
type phase1 struct {
	results chan nodeReply // one reply per node, buffered
	replied []bool
	got     []nodeReply // by node, where replied
	pending int         // replies not received yet
}

// nodeReply is one node's answer to the phase-1 acquire.
type nodeReply struct {
	i     int
	grant scripts.RedlockGrant
	err   error
}

// mayHold reports whether the node may hold this owner's key after this
// reply: it granted, or the outcome is unknown (an error: the script may
// have run before it failed, or the reply was lost).
func (r nodeReply) mayHold() bool { return r.err != nil || r.grant.Granted }

// sendAcquires starts phase 1 on every node.
func (m *Mutex) sendAcquires(ctx context.Context) *phase1 {
	p := &phase1{
		results: make(chan nodeReply, len(m.nodes)),
		replied: make([]bool, len(m.nodes)),
		got:     make([]nodeReply, len(m.nodes)),
		pending: len(m.nodes),
	}
	for i, n := range m.nodes {
		go func() { // its reply is received by collect or by settleLate's task
			actx, cancel := engine.Background(ctx)
			if mutantAbandon {
				actx, cancel = context.WithTimeout(ctx, m.nodeTimeout)
			}
			defer cancel()
			g, err := scripts.RedlockAcquire(actx, n.e.RC, &n.keys, m.owner, m.leaseMs)
			p.results <- nodeReply{i: i, grant: g, err: err}
		}()
	}
	return p
}

// collect waits for the replies until deadline (the node timeout) or until
// ctx ends; it reports false when ctx ended first. A reply that is already
// in when the wait stops counts, even if the node timeout has passed: a
// client stalled by a busy machine should not throw away answers that
// arrived (the validity check accounts for the time that passed).
func (p *phase1) collect(ctx context.Context, deadline time.Time) bool {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for waiting := true; waiting && p.pending > 0; {
		select {
		case r := <-p.results:
			p.take(r)
		case <-timer.C:
			waiting = false
		case <-ctx.Done():
			waiting = false
		}
	}
	for p.pending > 0 {
		select {
		case r := <-p.results:
			p.take(r)
		default:
			return ctx.Err() == nil
		}
	}
	return ctx.Err() == nil
}

func (p *phase1) take(r nodeReply) {
	p.replied[r.i], p.got[r.i] = true, r
	p.pending--
}

// settleLate undoes what phase 1 left behind, in a task the first Client
// owns (Close waits for it): it awaits the replies still owed and releases
// this owner's key on each node that granted late (or whose outcome is
// unknown) — and, with alsoReplied, on each node that replied so — unless
// the node belongs to the hold that is current by then (members, which a
// round sets and the hold's release clears, both under op). It holds op while it
// decides and releases, so no attempt or Unlock of this handle interleaves.
func (m *Mutex) settleLate(p *phase1, alsoReplied bool) {
	var undo []int
	if alsoReplied {
		for i, ok := range p.replied {
			if ok && p.got[i].mayHold() {
				undo = append(undo, i)
			}
		}
	}
	pending := p.pending
	if pending == 0 && len(undo) == 0 {
		return
	}
	m.e0.Go(func() {
		for range pending {
			if r := <-p.results; r.mayHold() {
				undo = append(undo, r.i)
			}
		}
		if len(undo) == 0 {
			return
		}
		m.op <- struct{}{}
		defer m.unlockOp()
		m.mu.Lock()
		keep := 0
		for _, i := range undo {
			if m.members == nil || !m.members[i] {
				undo[keep] = i
				keep++
			}
		}
		undo = undo[:keep]
		m.mu.Unlock()
		if len(undo) > 0 {
			// Wait for every reply: this task is the one that frees op.
			_, _, rest := m.release(context.Background(), undo, 2*engine.CompensateTimeout)
			if rest != nil {
				rest()
			}
		}
	})
}

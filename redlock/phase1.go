package redlock

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/scripts"
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
	// awaited counts the pending replies collect waits for: those of nodes
	// that were not stalled when the round began (see nodeState.stalled).
	awaited int
	stalled []bool
	// duringWait, when set (tests), runs in collect once the node wait has
	// begun: the Mutex's duringCollect.
	duringWait func()
}

// nodeReply is one node's answer to the phase-1 acquire.
type nodeReply struct {
	i     int
	grant scripts.RedlockGrant
	err   error
}

// mayHold reports whether the node may hold the round's key after this
// reply: it granted, or the outcome is unknown (an error: the script may
// have run before it failed, or the reply was lost).
func (r nodeReply) mayHold() bool { return r.err != nil || r.grant.Granted }

// sendAcquires starts phase 1 on every node, for the round's key value.
func (m *Mutex) sendAcquires(ctx context.Context, value string) *phase1 {
	p := &phase1{
		results: make(chan nodeReply, len(m.nodes)),
		replied: make([]bool, len(m.nodes)),
		got:     make([]nodeReply, len(m.nodes)),
		pending: len(m.nodes),
		stalled: make([]bool, len(m.nodes)),

		duringWait: m.duringCollect,
	}
	now := time.Now()
	for i, n := range m.nodes {
		p.stalled[i] = n.state.stalled(now, m.nodeTimeout)
		if !p.stalled[i] {
			p.awaited++
		}
		n.state.sent(now)
	}
	for i, n := range m.nodes {
		go func() { // its reply is received by collect or by settleLate's task
			actx, cancel := m.e0.Background(ctx) // ends when the task's Client gives it up
			if mutantAbandon {
				actx, cancel = context.WithTimeout(ctx, m.nodeTimeout)
			}
			defer cancel()
			g, err := scripts.RedlockAcquire(actx, n.e.RC, &n.keys, value, m.leaseMs)
			n.state.returned(time.Now(), err == nil || scripts.IsReply(err))
			p.results <- nodeReply{i: i, grant: g, err: err}
		}()
	}
	return p
}

// collect waits for the replies for the node timeout d (counted as
// nodeWait counts it: a stall of this process is not charged to the nodes,
// and the wait never outlasts limit) or until ctx ends, and not for nodes
// that were stalled when the round began; it reports false when ctx ended
// first. A reply that is already in when the wait stops counts, even if
// the node timeout has passed: a client stalled by a busy machine should
// not throw away answers that arrived (the validity check accounts for the
// time that passed).
//
// The node timeout starts here, once the acquires are on their way, not
// at the attempt's start: the time a round waited for the handle's
// previous operation is not the nodes' either (it counts against the
// validity, which is measured from the start).
func (p *phase1) collect(ctx context.Context, d, limit time.Duration) bool {
	w := newNodeWait(d, limit)
	defer w.stop()
	if p.duringWait != nil {
		p.duringWait()
	}
	for waiting := true; waiting && p.awaited > 0; {
		select {
		case r := <-p.results:
			p.take(r)
		case <-w.C():
			waiting = !w.expired()
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
	if !p.stalled[r.i] {
		p.awaited--
	}
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
			if ok && p.got[i].mayHold() {
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
			if r := <-p.results; r.mayHold() {
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

package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/scripts"
	"github.com/redisync/redisync/internal/watchdog"
)

// renewer extends Redlock holds for the first client's watchdog. A renewal
// batch goes to every node once: the holds' keys on a node are renewed
// together (one script call per hash slot, one round trip per node), and
// the nodes are asked in parallel. Each hold then counts its own votes: it
// is alive while a quorum confirms it, lost as soon as so many nodes report
// it gone that a quorum cannot confirm it, and Unknown (retried until its
// validity would run out) in between. A node that fails or hangs costs each
// hold its one vote and decides nothing else, and it delays nothing else
// either: a hold is handed to the watchdog as soon as its votes decide it
// (RenewEach), not when the slowest node of the batch has answered.
type renewer struct{}

var renewerOf = renewer{}

// renewTarget is a hold's watchdog target: its handle, and the key value of
// the round that won it (the value the hold's keys carry on the nodes).
type renewTarget struct {
	m     *Mutex
	value string
	nodes []*engine.RenewTarget // the hold on each of m.nodes, kept across rounds
}

// renewTarget is the target of a hold granted now.
func (m *Mutex) renewTarget() *renewTarget {
	rt := &renewTarget{m: m, value: m.holdValue(), nodes: make([]*engine.RenewTarget, len(m.nodes))}
	for i, n := range m.nodes {
		rt.nodes[i] = &engine.RenewTarget{
			Item:    scripts.RenewItem{Key: n.keys.Lock, Owner: rt.value, Info: n.keys.Info},
			LeaseMs: m.leaseMs,
		}
	}
	return rt
}

// NoteGrant implements engine.Granted.
func (rt *renewTarget) NoteGrant(sent time.Time, fixed bool) {
	for _, t := range rt.nodes {
		t.NoteGrant(sent, fixed)
	}
}

// RecordTargets implements engine.Recorded.
func (rt *renewTarget) RecordTargets() []*engine.RenewTarget { return rt.nodes }

var errUndecided = errors.New("redlock: renewal not confirmed by a quorum yet")

// vote is one node's answer for one hold.
type vote struct {
	lease, node int // indexes into the batch and into the hold's nodes
}

func (rn renewer) Renew(ctx context.Context, leases []*watchdog.Lease) []watchdog.Result {
	return rn.renew(ctx, leases, nil)
}

// RenewEach implements watchdog.StreamRenewer: a hold is reported as soon as
// its votes decide it (a quorum confirmed it, or so many nodes found it gone
// that no quorum can), so a stalled node, waited for up to four node
// timeouts, delays only the holds still waiting for its vote.
func (rn renewer) RenewEach(ctx context.Context, leases []*watchdog.Lease, report func(int, watchdog.Result)) {
	rn.renew(ctx, leases, report)
}

func (renewer) renew(ctx context.Context, leases []*watchdog.Lease, report func(int, watchdog.Result)) []watchdog.Result {
	var masters nodeSet // the batch's masters, each once
	at := map[*engine.Engine]int{}
	var byNode [][]vote
	var wait []time.Duration
	votes := make([][]watchdog.Result, len(leases))
	for i, l := range leases {
		m := l.Target.(*renewTarget).m
		votes[i] = make([]watchdog.Result, len(m.nodes))
		for j, n := range m.nodes {
			k, ok := at[n.e]
			if !ok {
				k = len(masters)
				at[n.e] = k
				masters = append(masters, &node{e: n.e})
				byNode = append(byNode, nil)
				wait = append(wait, 0)
			}
			byNode[k] = append(byNode[k], vote{i, j})
			wait[k] = max(wait[k], m.nodeTimeout*4)
		}
	}
	var mu sync.Mutex // guards votes and reported
	reported := make([]bool, len(leases))
	// Each master's bound is its own (the longest of its holds'): each's
	// own timeout is 0, and the command is bounded inside.
	masters.each(ctx, 0, func(ctx context.Context, k int, n *node) {
		e, vs := n.e, byNode[k]
		nctx, cancel := context.WithTimeout(ctx, wait[k])
		defer cancel()
		targets := make([]*engine.RenewTarget, len(vs))
		for t, v := range vs {
			targets[t] = leases[v.lease].Target.(*renewTarget).nodes[v.node]
		}
		sent := time.Now()
		res := engine.RenewOn(nctx, e, scripts.RedlockRenewBatch, targets)
		e.ObserveRenewal("redlock", res, time.Since(sent))
		var decided []int
		var results []watchdog.Result
		mu.Lock()
		for t, v := range vs {
			votes[v.lease][v.node] = res[t]
			if report == nil || reported[v.lease] {
				continue
			}
			// Votes not in yet count as Unknown: decide says Alive or
			// Gone only when no further vote can change it.
			if r := decide(votes[v.lease]); r.Status != watchdog.Unknown {
				reported[v.lease] = true
				decided = append(decided, v.lease)
				results = append(results, r)
			}
		}
		mu.Unlock()
		for t, i := range decided {
			report(i, results[t])
		}
	})

	out := make([]watchdog.Result, len(leases))
	for i, vs := range votes {
		out[i] = decide(vs)
		if report != nil && !reported[i] {
			report(i, out[i])
		}
	}
	return out
}

// decide turns one hold's votes (one per node) into its renewal result.
func decide(votes []watchdog.Result) watchdog.Result {
	ok, gone := 0, 0
	var errs []error
	for i, v := range votes {
		switch v.Status {
		case watchdog.Alive:
			ok++
		case watchdog.Gone:
			gone++
		default:
			errs = append(errs, fmt.Errorf("node %d: %w", i, v.Err))
		}
	}
	q := quorum(len(votes))
	switch {
	case ok >= q:
		return watchdog.Result{Status: watchdog.Alive}
	case gone > len(votes)-q:
		return watchdog.Result{Status: watchdog.Gone}
	}
	return watchdog.Result{Status: watchdog.Unknown, Err: fmt.Errorf("%w: %w", errUndecided, errors.Join(errs...))}
}

package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/scripts"
	"github.com/redisync/redisync/watchdog"
)

// renewer extends Redlock holds for the first client's watchdog. A renewal
// batch goes to every node once: the holds' keys on a node are renewed
// together (one script call per hash slot, one round trip per node), and
// the nodes are asked in parallel. Each hold then counts its own votes: it
// is alive while a quorum confirms it, lost as soon as so many nodes report
// it gone that a quorum cannot confirm it, and Unknown (retried until its
// validity would run out) in between. A node that fails or hangs costs each
// hold its one vote and decides nothing else.
type renewer struct{}

var renewerOf = renewer{}

// renewTarget is a hold's watchdog target: its handle, and the key value of
// the round that won it (the value the hold's keys carry on the nodes).
type renewTarget struct {
	m     *Mutex
	value string
}

var errUndecided = errors.New("redlock: renewal not confirmed by a quorum yet")

// vote is one node's answer for one hold.
type vote struct {
	lease, node int // indexes into the batch and into the hold's nodes
}

func (renewer) Renew(ctx context.Context, leases []*watchdog.Lease) []watchdog.Result {
	byNode := map[*engine.Engine][]vote{}
	wait := map[*engine.Engine]time.Duration{}
	votes := make([][]watchdog.Result, len(leases))
	for i, l := range leases {
		m := l.Target.(*renewTarget).m
		votes[i] = make([]watchdog.Result, len(m.nodes))
		for j, n := range m.nodes {
			byNode[n.e] = append(byNode[n.e], vote{i, j})
			wait[n.e] = max(wait[n.e], m.nodeTimeout*4)
		}
	}
	var wg sync.WaitGroup
	for e, vs := range byNode {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nctx, cancel := context.WithTimeout(ctx, wait[e])
			defer cancel()
			targets := make([]*engine.RenewTarget, len(vs))
			for k, v := range vs {
				rt := leases[v.lease].Target.(*renewTarget)
				m := rt.m
				targets[k] = &engine.RenewTarget{
					Item:    scripts.RenewItem{Key: m.nodes[v.node].keys.Lock, Owner: rt.value, Info: m.nodes[v.node].keys.Info},
					LeaseMs: m.leaseMs,
				}
			}
			sent := time.Now()
			res := engine.RenewOn(nctx, e, scripts.RedlockRenewBatch, targets)
			e.ObserveRenewal("redlock", res, time.Since(sent))
			for k, v := range vs {
				votes[v.lease][v.node] = res[k] // one writer per element
			}
		}()
	}
	wg.Wait()

	out := make([]watchdog.Result, len(leases))
	undecided := false
	for i, vs := range votes {
		out[i] = decide(vs)
		undecided = undecided || out[i].Status == watchdog.Unknown
	}
	if engine.RenewBatchErrFailsAll && undecided {
		return watchdog.Unknowns(len(leases), errUndecided)
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

package engine

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/scripts"
	"github.com/redisync/redisync/watchdog"
)

// MaxRenewBatch caps the holds renewed by one script call, so one call never
// blocks the server for long (about a millisecond at this size).
const MaxRenewBatch = 256

// BatchRenewer renews holds of one layout for the watchdog: one multi-key
// renewal script per hash slot (all holds together on a single server), at
// most MaxRenewBatch holds per script, every script in one DoMulti — one
// pipelined round trip per node. Each hold is judged by the reply to its
// own command: an error reply or a node that does not answer makes only the
// holds of that command Unknown.
type BatchRenewer struct {
	e      *Engine
	script *scripts.RenewScript
	layout string // for events: "lock", "rwlock", "semaphore"
}

// RenewTarget is a watchdog.Lease's Target for a BatchRenewer.
type RenewTarget struct {
	Item    scripts.RenewItem
	LeaseMs string
}

// Renew implements watchdog.Renewer.
func (r *BatchRenewer) Renew(ctx context.Context, leases []*watchdog.Lease) []watchdog.Result {
	targets := make([]*RenewTarget, len(leases))
	for i, l := range leases {
		targets[i] = l.Target.(*RenewTarget)
	}
	sent := time.Now()
	results := RenewOn(ctx, r.e, r.script, targets)
	r.e.ObserveRenewal(r.layout, results, time.Since(sent))
	return results
}

// RenewOn renews targets on e's deployment with script and returns one
// result per target. Targets are grouped by lease and, on a Cluster, by
// hash slot; each group is one script call (split at MaxRenewBatch), all
// sent in one DoMulti. A call that fails — an error reply such as BUSY or
// OOM, a timeout, a connection error — makes its own targets Unknown and
// no others.
func RenewOn(ctx context.Context, e *Engine, script *scripts.RenewScript, targets []*RenewTarget) []watchdog.Result {
	type group struct {
		leaseMs string
		slot    uint16
	}
	groups := map[group][]int{}
	var order []group // deterministic command order
	for i, t := range targets {
		g := group{leaseMs: t.LeaseMs}
		if e.Cluster {
			g.slot = keys.Slot(t.Item.Key)
		}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], i)
	}
	var cmds rueidis.Commands
	var parts [][]int
	for _, g := range order {
		idx := groups[g]
		for start := 0; start < len(idx); start += MaxRenewBatch {
			part := idx[start:min(start+MaxRenewBatch, len(idx))]
			cmds = append(cmds, script.Command(e.RC, g.leaseMs, items(targets, part)))
			parts = append(parts, part)
		}
	}
	replies := e.RC.DoMulti(ctx, cmds...)
	// Script cache flushed (restart, SCRIPT FLUSH): the commands that met
	// NOSCRIPT go again as EVAL (which loads the script), all in one more
	// pipelined round trip.
	var evals rueidis.Commands
	var again []int
	for i, res := range replies {
		if scripts.IsNoScript(res.Error()) {
			part := parts[i]
			evals = append(evals, script.EvalCommand(e.RC, targets[part[0]].LeaseMs, items(targets, part)))
			again = append(again, i)
		}
	}
	if len(evals) > 0 {
		for k, res := range e.RC.DoMulti(ctx, evals...) {
			replies[again[k]] = res
		}
	}
	out := make([]watchdog.Result, len(targets))
	for i, res := range replies {
		part := parts[i]
		alive, err := scripts.ParseRenew(res, len(part))
		for j, k := range part {
			switch {
			case err != nil:
				out[k] = watchdog.Result{Status: watchdog.Unknown, Err: err}
			case alive[j]:
				out[k] = watchdog.Result{Status: watchdog.Alive}
			default:
				out[k] = watchdog.Result{Status: watchdog.Gone}
			}
		}
	}
	if batchErrFailsAll {
		for _, r := range out {
			if r.Status == watchdog.Unknown {
				return watchdog.Unknowns(len(out), r.Err)
			}
		}
	}
	return out
}

// ObserveRenewal reports one renewal round of a layout: a Renewed event
// counting the holds it extended (Latency is the round trip) and a
// RenewFailed event counting those that got no answer, with the distinct
// errors joined. A round where some commands failed reports both; holds
// found gone are reported by their own Lost events.
func (e *Engine) ObserveRenewal(layout string, results []watchdog.Result, latency time.Duration) {
	alive, failed := 0, 0
	var errs []error
	seen := map[string]bool{}
	for _, r := range results {
		switch r.Status {
		case watchdog.Alive:
			alive++
		case watchdog.Unknown:
			failed++
			if r.Err != nil && !seen[r.Err.Error()] && len(errs) < maxReportedErrors {
				seen[r.Err.Error()] = true
				errs = append(errs, r.Err)
			}
		}
	}
	if alive > 0 {
		e.Observe(obs.Event{Kind: obs.Renewed, Primitive: layout, Count: alive, Latency: latency})
	}
	if failed > 0 {
		e.Observe(obs.Event{Kind: obs.RenewFailed, Primitive: layout, Count: failed, Err: errors.Join(errs...)})
	}
}

// maxReportedErrors bounds the distinct errors one RenewFailed event joins
// (a Cluster with a node down fails one command per slot, all alike).
const maxReportedErrors = 3

func items(targets []*RenewTarget, idx []int) []scripts.RenewItem {
	out := make([]scripts.RenewItem, len(idx))
	for i, k := range idx {
		out[i] = targets[k].Item
	}
	return out
}

// Millis formats a duration as the decimal milliseconds scripts expect.
func Millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

package engine

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/internal/scripts"
	"github.com/redisync/redisync/internal/watchdog"
)

// MaxRenewBatch caps the holds renewed by one script call, so one call never
// blocks the server for long (about a millisecond at this size).
const MaxRenewBatch = 256

// MaxRenewParts caps the concurrent parts of one renewal round on a Cluster
// (see RenewOn). Up to this many hash slots, each slot is its own part;
// beyond it, neighbouring slots share a part. A Cluster node serves ranges of
// neighbouring slots, so a shared part rarely spans two nodes.
const MaxRenewParts = 128

// BatchRenewer renews holds of one layout for the watchdog: one multi-key
// renewal script per hash slot (all holds together on a single server), at
// most MaxRenewBatch holds per script, pipelined (see RenewOn). Each hold is
// judged by the reply to its own command, and on a Cluster each slot's
// result is handed to the watchdog as soon as it arrives: an error reply or
// a node that does not answer makes only the holds of its own commands
// Unknown, and never delays the others' confirmation.
type BatchRenewer struct {
	e      *Engine
	script *scripts.RenewScript
	layout string // for events: "lock", "rwlock", "semaphore"
}

// RenewTarget is a watchdog.Lease's Target for a BatchRenewer.
type RenewTarget struct {
	wl watchdog.Lease // the hold's watchdog lease (see Granted)
	// The fields a renewal round reads of every target follow its lease,
	// with the round's record bookkeeping: a round touches thousands of
	// targets scattered over the heap, a cache miss per line.
	LeaseMs string
	// Fixed marks a fixed lease: the watchdog hands it over once, a third
	// of its lease after the grant, for its holder record only (see
	// RecordHolders); it is never extended.
	Fixed bool

	// Owned by the renewal round that carries the target (one at a time).
	// recordRetry: the last record write got no answer; due again.
	recordRetry atomic.Bool
	// recordedAt is recorded for readers outside the round (a release):
	// unix ns of the first record write that got an answer, 0 for none.
	recordedAt atomic.Int64
	recorded   time.Time // when its record was last written; zero: never
	recordNext time.Time // when a renewal writes it again
	// recordFlight is closed when the last renewal round that carried the
	// target ended, its record writes answered (see AwaitRecord); nil
	// before the first.
	recordFlight atomic.Pointer[chan struct{}]

	Item scripts.RenewItem
	// Granted is when the hold was granted (its acquire's send time): its
	// record's start.
	Granted time.Time
}

// Renew implements watchdog.Renewer.
func (r *BatchRenewer) Renew(ctx context.Context, leases []*watchdog.Lease) []watchdog.Result {
	return r.renew(ctx, leases, nil)
}

// RenewEach implements watchdog.StreamRenewer (see RenewParts).
func (r *BatchRenewer) RenewEach(ctx context.Context, leases []*watchdog.Lease, report func(int, watchdog.Result)) {
	r.renew(ctx, leases, func(idx []int, res []watchdog.Result) {
		for j, i := range idx {
			report(i, res[j])
		}
	})
}

// RenewParts implements watchdog.PartRenewer: each part of the round (see
// RenewOn) reports its holds, together, when its replies are in.
func (r *BatchRenewer) RenewParts(ctx context.Context, leases []*watchdog.Lease, report func([]int, []watchdog.Result)) {
	r.renew(ctx, leases, report)
}

func (r *BatchRenewer) renew(ctx context.Context, leases []*watchdog.Lease, report func([]int, []watchdog.Result)) []watchdog.Result {
	var sc *renewScratch
	var targets []*RenewTarget
	if report != nil { // the results are not kept past the reports: reuse the round's arrays
		sc = renewScratches.Get().(*renewScratch)
		targets = sc.targets[:0]
	}
	targets = slices.Grow(targets, len(leases))
	for _, l := range leases {
		targets = append(targets, l.Target.(*RenewTarget))
	}
	sent := time.Now()
	results := renewOn(ctx, r.e, r.script, targets, report, sc)
	r.e.ObserveRenewal(r.layout, results, time.Since(sent))
	if sc != nil {
		clear(targets) // the pool keeps no hold, and no error, alive
		clear(sc.out)
		sc.targets = targets[:0]
		renewScratches.Put(sc)
		return nil
	}
	return results
}

// renewScratch is a round's working arrays, reused through renewScratches
// (a round of 100,000 holds made megabytes of them, which the collector
// then paid for by scanning every live hold).
type renewScratch struct {
	targets []*RenewTarget
	out     []watchdog.Result
	idx     []int // the first group's holds
	rep     []int // a report's indexes
	res     []watchdog.Result
	alive   []bool
	cand    []int // targets whose record may be due
}

var renewScratches = sync.Pool{New: func() any { return new(renewScratch) }}

// RenewOn renews targets on e's deployment with script and returns one
// result per target. Targets are grouped by lease and, on a Cluster, by
// hash slot; each group is one script call (split at MaxRenewBatch). A call
// that fails — an error reply such as BUSY or OOM, a timeout, a connection
// error — makes its own targets Unknown and no others.
//
// On a single server every call goes in one DoMulti: one pipelined round
// trip. On a Cluster each hash slot's calls are a part of their own, sent
// from a goroutine of its own (RenewOn waits for all of them), because a
// rueidis DoMulti returns only when every node has answered or ctx has ended
// (TestRueidisClusterDoMultiWaitsForEveryNode): in one DoMulti a paused
// master held back the healthy masters' replies until the round's bound,
// their NOSCRIPT fallback then went out with the spent ctx, and their holds
// were lost with the paused master's. rueidis pipelines concurrent parts on
// each node's connection, so a part costs a goroutine, not a round trip.
func RenewOn(ctx context.Context, e *Engine, script *scripts.RenewScript, targets []*RenewTarget) []watchdog.Result {
	return renewOn(ctx, e, script, targets, nil, nil)
}

// renewCall is one script call of a round: the targets it carries.
type renewCall struct {
	leaseMs string
	slot    uint16
	fixed   bool  // fixed leases: no renewal, only their records
	idx     []int // indexes into the round's targets
	// cand[candFrom:candTo] of the round are the targets of the call whose
	// record may be due (see mayRecord).
	candFrom, candTo int
}

// renewOn is RenewOn, calling report (if not nil) with the targets of each
// part (their indexes, and their results) as soon as its replies are in.
// With sc, the results and the working arrays are sc's (valid until sc is
// reused).
func renewOn(ctx context.Context, e *Engine, script *scripts.RenewScript, targets []*RenewTarget, report func([]int, []watchdog.Result), sc *renewScratch) []watchdog.Result {
	type group struct {
		leaseMs string
		slot    uint16
		fixed   bool
	}
	// Groups in order of first appearance (a deterministic command order);
	// a single server has one or a few (one per lease length), found by a
	// look along the list, a Cluster one per slot, found in a map.
	var order []group
	var idxs [][]int
	var bySlot map[group]int
	if e.Cluster {
		bySlot = map[group]int{}
	}
	for i, t := range targets {
		g := group{leaseMs: t.LeaseMs, fixed: t.Fixed}
		k := -1
		if e.Cluster {
			g.slot = keys.Slot(t.Item.Key)
			if j, ok := bySlot[g]; ok {
				k = j
			}
		} else {
			for j := range order {
				if order[j] == g {
					k = j
					break
				}
			}
		}
		if k < 0 {
			k = len(order)
			order = append(order, g)
			var idx []int
			switch {
			case e.Cluster:
			case k == 0 && sc != nil:
				idx = slices.Grow(sc.idx[:0], len(targets))
			default:
				idx = make([]int, 0, len(targets)/(k+1))
			}
			idxs = append(idxs, idx)
			if e.Cluster {
				bySlot[g] = k
			}
		}
		idxs[k] = append(idxs[k], i)
	}
	var calls []renewCall
	for k, g := range order {
		idx := idxs[k]
		for start := 0; start < len(idx); start += MaxRenewBatch {
			calls = append(calls, renewCall{leaseMs: g.leaseMs, slot: g.slot, fixed: g.fixed, idx: idx[start:min(start+MaxRenewBatch, len(idx))]})
		}
	}
	var out []watchdog.Result
	if sc != nil {
		if len(idxs) > 0 && !e.Cluster {
			sc.idx = idxs[0][:0]
		}
		out = slices.Grow(sc.out[:0], len(targets))[:len(targets)]
		sc.out = out
	} else {
		out = make([]watchdog.Result, len(targets))
	}
	if !e.Cluster {
		runRenewCalls(ctx, e, script, targets, calls, out, report, sc)
	} else {
		var wg sync.WaitGroup
		for _, part := range splitBySlot(calls) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runRenewCalls(ctx, e, script, targets, part, out, report, nil) // parts write disjoint entries of out
			}()
		}
		wg.Wait()
	}
	return out
}

// splitBySlot groups calls into the parts of a Cluster round: the calls of
// one hash slot together, neighbouring slots sharing a part when there are
// more than MaxRenewParts slots.
func splitBySlot(calls []renewCall) [][]renewCall {
	bySlot := map[uint16][]renewCall{}
	var slots []uint16
	for _, c := range calls {
		if _, ok := bySlot[c.slot]; !ok {
			slots = append(slots, c.slot)
		}
		bySlot[c.slot] = append(bySlot[c.slot], c)
	}
	slices.Sort(slots)
	n := min(len(slots), MaxRenewParts)
	parts := make([][]renewCall, n)
	for k := range parts {
		for _, slot := range slots[k*len(slots)/n : (k+1)*len(slots)/n] {
			parts[k] = append(parts[k], bySlot[slot]...)
		}
	}
	return parts
}

// runRenewCalls sends calls in one DoMulti, sends the calls that met
// NOSCRIPT again as EVAL (which loads the script) in one more, and fills
// out (and reports) the results of their targets. Then it writes the
// holder records that are due (RecordHolders), after the report: a record
// never delays a confirmation. With sc, its arrays are sc's.
func runRenewCalls(ctx context.Context, e *Engine, script *scripts.RenewScript, targets []*RenewTarget, calls []renewCall, out []watchdog.Result, report func([]int, []watchdog.Result), sc *renewScratch) {
	if sc == nil {
		sc = new(renewScratch)
	}
	sent := time.Now()
	flight := make(chan struct{})
	defer close(flight) // after sendRecords: see AwaitRecord
	// Without a holder-info payload no target wants a record.
	records := e.Config.HolderInfo != ""
	cand := sc.cand[:0]
	var cmds rueidis.Commands
	var sentCalls []int // indexes into calls of the commands in cmds
	for i := range calls {
		c := &calls[i]
		c.candFrom = len(cand)
		if c.fixed {
			for _, k := range c.idx {
				if t := targets[k]; records {
					c.await(t, &flight)
					if mayRecord(t, sent) {
						cand = append(cand, k)
					}
				}
				out[k] = watchdog.Result{Status: watchdog.Alive} // not renewed: nothing to judge
			}
			c.candTo = len(cand)
			continue
		}
		// The command's arguments are read from each target once: the
		// target's record flight is set, and whether its record may be
		// due noted, in the same look (before the send).
		item := c.item(targets)
		if records {
			item = func(i int) *scripts.RenewItem {
				k := c.idx[i]
				t := targets[k]
				c.await(t, &flight)
				if mayRecord(t, sent) {
					cand = append(cand, k)
				}
				return &t.Item
			}
		}
		cmds = append(cmds, script.Command(e.RC, c.leaseMs, len(c.idx), item))
		c.candTo = len(cand)
		sentCalls = append(sentCalls, i)
	}
	sc.cand = cand[:0]
	if len(cmds) > 0 {
		// The SCRIPT LOAD that learns the script's digest goes with the
		// first call, to its slot's node.
		slotKey := targets[calls[sentCalls[0]].idx[0]].Item.Key
		multi := func(cmds ...rueidis.Completed) []rueidis.RedisResult {
			return script.DoMulti(ctx, e.RC, slotKey, cmds...)
		}
		replies := doScripts(ctx, e, multi, cmds, func(j int) rueidis.Completed {
			c := &calls[sentCalls[j]]
			return script.EvalCommand(e.RC, c.leaseMs, len(c.idx), c.item(targets))
		})
		for j, res := range replies {
			c := &calls[sentCalls[j]]
			idx := c.idx
			alive, err := script.ParseRenewInto(sc.alive[:0], res, len(idx), c.item(targets))
			sc.alive = alive[:0]
			for i, k := range idx {
				switch {
				case err != nil:
					out[k] = watchdog.Result{Status: watchdog.Unknown, Err: err}
				case alive[i]:
					out[k] = watchdog.Result{Status: watchdog.Alive}
				default:
					out[k] = watchdog.Result{Status: watchdog.Gone}
				}
			}
		}
	}
	var plan *recordPlan
	if records {
		plan = e.planRecords(targets, calls, cand, out, sent)
	}
	if report != nil {
		n := 0
		for _, c := range calls {
			n += len(c.idx)
		}
		idx, res := slices.Grow(sc.rep[:0], n), slices.Grow(sc.res[:0], n)
		for _, c := range calls {
			for _, k := range c.idx {
				idx, res = append(idx, k), append(res, out[k])
			}
		}
		report(idx, res)
		clear(res) // the pool keeps no error alive
		sc.rep, sc.res = idx[:0], res[:0]
	}
	e.sendRecords(ctx, plan)
}

// await marks t, when it wants a record and has none yet, as waiting for
// the record writes of the round whose flight is closed when they are
// answered (see AwaitRecord).
func (c *renewCall) await(t *RenewTarget, flight *chan struct{}) {
	if t.Item.Info != "" && t.recordedAt.Load() == 0 {
		t.recordFlight.Store(flight)
	}
}

// doScripts sends cmds in one multi (a script's DoMulti, which learns its
// digest), and the commands that met NOSCRIPT (script cache flushed by a
// restart or SCRIPT FLUSH, or never loaded) again as eval(i) in one more.
func doScripts(ctx context.Context, e *Engine, multi func(...rueidis.Completed) []rueidis.RedisResult, cmds rueidis.Commands, eval func(i int) rueidis.Completed) []rueidis.RedisResult {
	replies := multi(cmds...)
	var evals rueidis.Commands
	var again []int
	for i, res := range replies {
		if scripts.IsNoScript(res.Error()) {
			evals = append(evals, eval(i))
			again = append(again, i)
		}
	}
	if len(evals) > 0 {
		for k, res := range e.RC.DoMulti(ctx, evals...) {
			replies[again[k]] = res
		}
	}
	return replies
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

// item returns the call's i-th hold among the round's targets.
func (c *renewCall) item(targets []*RenewTarget) func(int) *scripts.RenewItem {
	return func(i int) *scripts.RenewItem { return &targets[c.idx[i]].Item }
}

// Millis formats a duration as the decimal milliseconds scripts expect.
func Millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

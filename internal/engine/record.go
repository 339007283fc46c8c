package engine

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/scripts"
	"github.com/redisync/redisync/internal/watchdog"
)

// Holder records off the hot path (RecordHolders): an acquire records
// nothing. A hold's record (who holds it, for redisync inspect and
// Holders) is written with its first renewal, a third of its lease after
// the grant — for a fixed lease, by the watchdog's timer at the same
// moment — so a hold that ends sooner costs no record nobody read. A
// watchdog hold's record lives RecordTTL(lease) and is refreshed (its
// expiry raised) by the first renewal RecordRefresh(lease) or more after
// the last write: two calls in twelve renewals, not a call in each. A fixed hold's
// record lives one lease from its write. Releases and force-unlocks delete
// records as before; a crashed holder's record expires by itself.

// RecordTTL is how long a watchdog hold's record lives from its last write.
func RecordTTL(lease time.Duration) time.Duration { return 8 * lease }

// RecordRefresh is how long after its last write a watchdog hold's record
// is written again (by the first renewal after that): half its TTL, so it
// outlives the hold's lease by a lease at least while renewals go on.
func RecordRefresh(lease time.Duration) time.Duration { return 4 * lease }

// recordDue reports whether t's record is to be written by a renewal sent
// at sent that found the hold alive (res).
func (e *Engine) recordDue(t *RenewTarget, res watchdog.Result, sent time.Time) bool {
	return e.Config.HolderInfo != "" && res.Status == watchdog.Alive && mayRecord(t, sent)
}

// mayRecord reports whether t's record is to be written by a renewal sent
// at sent, if the renewal finds the hold alive (with a holder-info
// payload). The round asks it while it reads the target for its command,
// and looks at the target again after the replies only if so: a record is
// due in one renewal of twelve. A record write of an earlier round that
// gets no answer after this look is due at the target's next renewal.
func mayRecord(t *RenewTarget, sent time.Time) bool {
	return t.Item.Info != "" && (t.recorded.IsZero() || t.recordRetry.Load() || (!t.Fixed && !sent.Before(t.recordNext)))
}

// NoteGrant implements Granted.
func (t *RenewTarget) NoteGrant(sent time.Time, fixed bool) { t.Granted, t.Fixed = sent, fixed }

// Granted is a renewal target told of its hold's grant (internal/hold
// tells it before the lease goes to the watchdog): when it was sent, and
// whether the lease is fixed.
type Granted interface {
	NoteGrant(sent time.Time, fixed bool)
}

// LeaseCarrier is a renewal target that comes with its hold's
// watchdog.Lease (zero until the hold sets it): one allocation for both,
// side by side in memory for the renewals that read them together.
type LeaseCarrier interface {
	Lease() *watchdog.Lease
}

// Lease implements LeaseCarrier.
func (t *RenewTarget) Lease() *watchdog.Lease { return &t.wl }

// WantsRecord reports whether a hold renewed with target t has a holder
// record to write: then a fixed lease goes to the watchdog with its
// Renewer, which writes the record at a third of the lease.
func (e *Engine) WantsRecord(t *RenewTarget) bool {
	return e.Config.HolderInfo != "" && t.Item.Info != ""
}

func (t *RenewTarget) lease() time.Duration {
	ms, _ := strconv.ParseInt(t.LeaseMs, 10, 64)
	return time.Duration(ms) * time.Millisecond
}

// recordPlan is the holder records a renewal round writes: one
// holder_record.lua call per renewal call that has any (the same slot).
type recordPlan struct {
	cmds    rueidis.Commands
	evals   []func() rueidis.Completed
	carried [][]*RenewTarget
	first   [][]bool // the call marked the target recorded first
}

// planRecords picks the records due among the targets of calls and marks
// them written, before the round reports its results: the watchdog may send
// a target again as soon as it is reported, and the next round must see
// the marks (a round owns its targets until it reports them). sendRecords
// then writes them, and undoes a mark the server refused.
// Only the candidates (cand[c.candFrom:c.candTo] for call c: see
// mayRecord) are looked at.
func (e *Engine) planRecords(targets []*RenewTarget, calls []renewCall, cand []int, out []watchdog.Result, sent time.Time) *recordPlan {
	var p *recordPlan
	for _, c := range calls {
		cs := cand[c.candFrom:c.candTo]
		if len(cs) == 0 {
			continue
		}
		// Sized once: most candidates are due (their holds alive).
		due := make([]*RenewTarget, 0, len(cs))
		recs := make([]scripts.Record, 0, len(cs))
		first := make([]bool, 0, len(cs))
		for _, k := range cs {
			t := targets[k]
			if !e.recordDue(t, out[k], sent) {
				continue
			}
			due = append(due, t)
			recs = append(recs, scripts.Record{Info: t.Item.Info, Field: t.Item.Owner,
				Lock: t.Item.Key, Token: t.Item.TokenArg(),
				AgeMs: sent.Sub(t.Granted).Milliseconds(), Refresh: !t.recorded.IsZero()})
			// A release from now on may find a record: it is given the
			// holder-info hash.
			first = append(first, t.recordedAt.CompareAndSwap(0, sent.UnixNano()))
			t.recorded, t.recordNext = sent, sent.Add(RecordRefresh(t.lease()))
			t.recordRetry.Store(false)
		}
		if len(due) == 0 {
			continue
		}
		if p == nil {
			p = &recordPlan{}
		}
		ttl := RecordTTL(due[0].lease())
		if c.fixed {
			ttl = due[0].lease()
		}
		ttlMs := Millis(ttl)
		rec := func(i int) scripts.Record { return recs[i] }
		p.cmds = append(p.cmds, scripts.HolderRecord(e.RC, e.Config.HolderInfo, ttlMs, len(due), rec))
		p.evals = append(p.evals, func() rueidis.Completed {
			return scripts.HolderRecordEval(e.RC, e.Config.HolderInfo, ttlMs, len(due), rec)
		})
		p.carried = append(p.carried, due)
		p.first = append(p.first, first)
	}
	return p
}

// sendRecords writes the planned records in one DoMulti. A record that got
// an answer — written, or refused (the ACL, out of memory: the record is
// worth no retry storm) — is not due again before RecordRefresh; one that
// got none (a timeout) is due at the hold's next renewal.
func (e *Engine) sendRecords(ctx context.Context, p *recordPlan) {
	if p == nil {
		return
	}
	slotKey := p.carried[0][0].Item.Info
	multi := func(cmds ...rueidis.Completed) []rueidis.RedisResult {
		return scripts.HolderRecordDoMulti(ctx, e.RC, slotKey, cmds...)
	}
	replies := doScripts(ctx, e, multi, p.cmds, func(i int) rueidis.Completed { return p.evals[i]() })
	for i, res := range replies {
		err := res.Error()
		for j, t := range p.carried[i] {
			switch {
			case err != nil && !scripts.IsReply(err):
				t.recordRetry.Store(true) // it may have been written: the mark stays
			case err != nil && p.first[i][j]:
				t.recordedAt.Store(0) // refused: there is none
			}
		}
	}
}

// RecordsFor reports whether a hold with renewal target target (a
// *RenewTarget, or a target that lists them: Recorded) writes a holder
// record.
func (e *Engine) RecordsFor(target any) bool {
	switch t := target.(type) {
	case *RenewTarget:
		return e.WantsRecord(t)
	case Recorded:
		for _, rt := range t.RecordTargets() {
			if e.WantsRecord(rt) {
				return true
			}
		}
	}
	return false
}

// Recorded is a renewal target made of per-node RenewTargets (redlock's).
type Recorded interface{ RecordTargets() []*RenewTarget }

// AwaitRecord waits (until ctx ends at most) for the renewal round in
// flight with target, if any, to end, its record writes answered: a
// release sent after it finds (IsRecorded) and deletes the record that
// round writes, where a release sent before the write would leave it to
// its TTL and to the owner's next hold. The watchdog no longer carries a
// target whose hold is being released, so no later round starts.
func AwaitRecord(ctx context.Context, target any) {
	// Redlock's targets (Recorded) are not awaited: its rounds wait for
	// stalled nodes, which its release must not.
	t, ok := target.(*RenewTarget)
	if !ok {
		return
	}
	if ch := t.recordFlight.Load(); ch != nil {
		select {
		case <-*ch:
		case <-ctx.Done():
		}
	}
}

// IsRecorded reports whether the hold with renewal target target may have
// a holder record: its release then deletes it. False only when no record
// was written for it (nor for any of its nodes): the release is given no
// holder-info hash.
func IsRecorded(target any) bool {
	switch t := target.(type) {
	case *RenewTarget:
		return t.recordedAt.Load() != 0
	case Recorded:
		for _, rt := range t.RecordTargets() {
			if rt.recordedAt.Load() != 0 {
				return true
			}
		}
		return false
	}
	return true
}

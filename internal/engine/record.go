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
	if !e.WantsRecord(t) || res.Status != watchdog.Alive {
		return false
	}
	return t.recorded.IsZero() || (!t.Fixed && !sent.Before(t.recordNext))
}

// NoteGrant implements Granted.
func (t *RenewTarget) NoteGrant(sent time.Time, fixed bool) { t.Granted, t.Fixed = sent, fixed }

// Granted is a renewal target told of its hold's grant (internal/hold
// tells it before the lease goes to the watchdog): when it was sent, and
// whether the lease is fixed.
type Granted interface {
	NoteGrant(sent time.Time, fixed bool)
}

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

// recordHolders writes the records due among the targets of calls (one
// holder_record.lua call per renewal call that has any: the same slot), in
// one DoMulti. A target whose record got an answer — written, or refused
// (the ACL, out of memory, foreign data: the record is worth no retry
// storm) — is not due again before RecordRefresh; one that got none (a
// timeout) is due at its next renewal.
func (e *Engine) recordHolders(ctx context.Context, targets []*RenewTarget, calls []renewCall, out []watchdog.Result, sent time.Time) {
	var cmds rueidis.Commands
	var evals []func() rueidis.Completed
	var carried [][]*RenewTarget
	for _, c := range calls {
		var due []*RenewTarget
		for _, k := range c.idx {
			if e.recordDue(targets[k], out[k], sent) {
				due = append(due, targets[k])
			}
		}
		if len(due) == 0 {
			continue
		}
		ttl := RecordTTL(due[0].lease())
		if c.fixed {
			ttl = due[0].lease()
		}
		ttlMs := Millis(ttl)
		rec := func(i int) scripts.Record {
			t := due[i]
			return scripts.Record{Info: t.Item.Info, Field: t.Item.Owner, AgeMs: sent.Sub(t.Granted).Milliseconds(), Refresh: !t.recorded.IsZero()}
		}
		cmds = append(cmds, scripts.HolderRecord(e.RC, e.Config.HolderInfo, ttlMs, len(due), rec))
		evals = append(evals, func() rueidis.Completed {
			return scripts.HolderRecordEval(e.RC, e.Config.HolderInfo, ttlMs, len(due), rec)
		})
		carried = append(carried, due)
	}
	if len(cmds) == 0 {
		return
	}
	// A release from now on may find a record: it is given the holder-info
	// hash (first marks whom this round marks first).
	var first []bool
	for _, due := range carried {
		for _, t := range due {
			first = append(first, t.recordedAt.CompareAndSwap(0, sent.UnixNano()))
		}
	}
	replies := doScripts(ctx, e, cmds, func(i int) rueidis.Completed { return evals[i]() })
	k := 0
	for i, res := range replies {
		err := res.Error()
		for _, t := range carried[i] {
			switch {
			case err != nil && !scripts.IsReply(err):
				// No answer: due again at the next renewal; it may have
				// been written.
			case err != nil && first[k]:
				t.recordedAt.Store(0) // refused: there is none
				fallthrough
			default:
				t.recorded, t.recordNext = sent, sent.Add(RecordRefresh(t.lease()))
			}
			k++
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

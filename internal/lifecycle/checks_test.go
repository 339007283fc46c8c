package lifecycle

// The checks after every step: the handles' views, the renewals, and Redis.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/rueidis"
	"pgregory.net/rapid"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/watchdog"
)

func (r *run) check(t *rapid.T) {
	r.checkViews(t)
	r.checkRenewals(t)
	if err := r.poll(releaseBound, r.redisState); err != nil {
		t.Fatalf("Redis does not match the model within %v: %v", releaseBound, err)
	}
	r.stepStart = time.Now()
	r.before = r.live()
	clear(r.transient)
}

// checkViews compares each handle's Done, Err and Token with the model.
func (r *run) checkViews(t *rapid.T) {
	for _, lk := range r.locks {
		for _, h := range lk.handles {
			if h.side == permit && h.p == nil {
				continue
			}
			done, err, tok := isDone(h.doneNow()), h.errNow(), h.tokenNow()
			if h.count > 0 && done && errors.Is(err, redisync.ErrLockLost) && r.lapsed(h) {
				h.count, h.token, h.lost = 0, 0, true
				lk.lostAt = time.Now()
				r.e.stats["lost at the deadline (late renewals)"]++
			}
			switch {
			case h.count > 0:
				if done || err != nil || tok != h.token {
					t.Fatalf("%s: the model holds it %d time(s) with token %d; the handle says Done closed=%v, Err=%v, Token=%d",
						h.label, h.count, h.token, done, err, tok)
				}
			case h.lost:
				if !done || !errors.Is(err, redisync.ErrLockLost) {
					t.Fatalf("%s: the model has it lost; the handle says Done closed=%v, Err=%v", h.label, done, err)
				}
			case r.closed:
			default:
				okErr := errors.Is(err, redisync.ErrNotHeld) || (h.wasLost && errors.Is(err, redisync.ErrLockLost))
				if !done || !okErr || (h.side != permit && tok != 0) {
					t.Fatalf("%s: the model has it released; the handle says Done closed=%v, Err=%v, Token=%d",
						h.label, done, err, tok)
				}
			}
		}
	}
}

// lapseSlack is how much earlier than the watchdog the model may date a
// confirmation: it dates a round by its Renewed event (the reply's arrival
// less the round trip, taken after the round's goroutine started) and a
// grant by Lock's return.
const lapseSlack = lease / 20

// lapsed reports whether h, which the model holds and whose handle reports
// it lost with no fault struck, was lost by the watchdog's deadline rule
// (watchdog package doc, "Outcomes"): a lease no renewal confirmed within
// TTL − drift of the send of its last confirmed one is lost, whatever is in
// flight. On a loaded machine (-race, shards beside other work) renewal
// rounds are sent or answered late — a reply later than a third of the lease
// counts as none — and a hold no fault touched can lapse so; Redis may still
// have its key for a moment (it expires within the drift and the last
// round trip), but the handle can no longer trust it, and reporting the
// loss is the documented behaviour.
//
// The model accepts such a loss only with the evidence: the lock's Lost
// event comes at least TTL − drift (less lapseSlack) after the hold's last
// confirmation the model can see (its grant, or a Renewed round of its
// layout sent since); in between the machine was seen loaded (a round of
// its layout timed out, or the test process itself stalled for stallMin);
// and no round of its layout failed in between with an error other than a
// timeout. A hold the server reports gone (a renewal reply of 0) comes with
// a round, a third of the lease after its confirmation, so it is not
// excused; nor is a hold lost because a round's script failed (defect 6's
// mutant: a WRONGTYPE reply failing every hold of the batch), nor one a
// watchdog forgot to renew on a machine that kept up.
func (r *run) lapsed(h *handle) bool {
	names := append([]string{h.lk.name}, h.lk.keys...)
	return r.rec.lapsed(h.layout, names, h.grantedAt)
}

// lapsed is run.lapsed on the recorded events: a Lost event of one of names
// at least the deadline after confirmed (moved to every later Renewed round
// of layout before the loss), with a stall or a timed-out round of layout
// in between and no other failure of one.
func (rec *recorder) lapsed(layout string, names []string, confirmed time.Time) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var lostAt time.Time
	for _, ev := range rec.watch {
		if ev.kind == redisync.EventLost && slices.Contains(names, ev.name) && ev.at.After(confirmed) {
			lostAt = ev.at
		}
	}
	if lostAt.IsZero() {
		return false
	}
	for _, ev := range rec.watch {
		if ev.kind == redisync.EventRenewed && ev.layout == layout && ev.sent.After(confirmed) && ev.sent.Before(lostAt) {
			confirmed = ev.sent
		}
	}
	if lostAt.Sub(confirmed) < lease-watchdog.Drift(lease)-lapseSlack {
		return false
	}
	loaded := false
	for _, ev := range rec.watch {
		if ev.kind == redisync.EventRenewFailed && ev.layout == layout && ev.at.After(confirmed) && !ev.at.After(lostAt) {
			if !onlyTimeouts(ev.err) {
				return false
			}
			loaded = true
		}
	}
	for _, s := range rec.stalls {
		loaded = loaded || (s.to.After(confirmed) && s.from.Before(lostAt))
	}
	return loaded
}

// onlyTimeouts reports whether err (errors joined, as a RenewFailed event's)
// is made of timeouts only.
func onlyTimeouts(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyTimeouts(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// live counts the watchdog leases the model has alive, by layout.
func (r *run) live() map[string]int {
	n := map[string]int{}
	for _, lk := range r.locks {
		for _, h := range lk.handles {
			if h.layout != "" && (h.count > 0 || (h.lost && lk.kind == "multilock")) {
				n[h.layout] += h.leases
			}
		}
	}
	return n
}

// checkRenewals fails on a renewal batch with more holds than the model had
// alive when it was sent: a renewal of a hold that is over.
func (r *run) checkRenewals(t *rapid.T) {
	now := time.Now()
	after := r.live()
	during := map[string]int{}
	for _, layout := range []string{"lock", "rwlock", "semaphore", "redlock"} {
		during[layout] = max(r.before[layout], after[layout]) + r.transient[layout]
	}
	r.spans = append(r.spans, span{r.stepStart, now, during})
	evs := r.rec.since(r.seen)
	r.seen += len(evs)
	for _, ev := range evs {
		allowed := 0
		for _, s := range r.spans {
			if !ev.at.Before(s.from) && !ev.at.After(s.to.Add(renewGrace)) {
				allowed = max(allowed, s.live[ev.layout])
			}
		}
		if ev.count > allowed {
			t.Fatalf("a renewal batch of %d %s hold(s) while the model had at most %d alive (a renewal of a hold that is over)",
				ev.count, ev.layout, allowed)
		}
	}
	if len(r.spans) > 64 {
		r.spans = r.spans[len(r.spans)-64:]
	}
}

// poll retries check until it passes or within runs out.
func (r *run) poll(within time.Duration, check func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *run) raw(t *rapid.T, args ...string) {
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	rc := r.e.raw[0]
	if err := rc.Do(ctx, rc.B().Arbitrary(args...).Build()).Error(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}

// rawOn runs one command on server i for a check.
func (r *run) rawOn(i int, args ...string) rueidis.RedisResult {
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	rc := r.e.raw[i]
	return rc.Do(ctx, rc.B().Arbitrary(args...).Build())
}

// hashState checks a hash-layout lock key against owner → count (fields
// starting with "redisync:" are ours and skipped): absent when want is empty,
// otherwise exactly those fields and a positive PTTL.
func (r *run) hashState(key string, want map[string]int64, extra map[string]string) error {
	got, err := r.rawOn(0, "HGETALL", key).AsStrMap()
	if err != nil && !rueidis.IsRedisNil(err) {
		return fmt.Errorf("HGETALL %s: %w", key, err)
	}
	if len(want) == 0 {
		if len(got) > 0 {
			return fmt.Errorf("%s should be free, Redis has %v", key, got)
		}
		return nil
	}
	fields := map[string]string{}
	for f, v := range got {
		if !strings.HasPrefix(f, "redisync:") {
			fields[f] = v
		}
	}
	wantFields := map[string]string{}
	for f, n := range want {
		wantFields[f] = fmt.Sprint(n)
	}
	for f, v := range extra {
		wantFields[f] = v
	}
	if fmt.Sprint(fields) != fmt.Sprint(wantFields) {
		return fmt.Errorf("%s: Redis has %v, the model %v", key, fields, wantFields)
	}
	if pttl, _ := r.rawOn(0, "PTTL", key).AsInt64(); pttl <= 0 {
		return fmt.Errorf("%s is held but its PTTL is %d", key, pttl)
	}
	return nil
}

func (r *run) absent(i int, keys ...string) error {
	for _, k := range keys {
		if n, _ := r.rawOn(i, "EXISTS", k).AsInt64(); n != 0 {
			return fmt.Errorf("%s should not exist on server %d", k, i)
		}
	}
	return nil
}

// redisState compares Redis with the model.
func (r *run) redisState() error {
	if r.closed {
		return nil
	}
	for _, lk := range r.locks {
		if err := r.lockState(lk); err != nil {
			return err
		}
	}
	return r.leaks()
}

func (r *run) lockState(lk *lockM) error {
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	switch lk.kind {
	case "rlock", "fairlock":
		want := map[string]int64{}
		for _, h := range lk.handles {
			if h.count > 0 {
				want[h.owner] += int64(h.count)
			}
		}
		if err := r.hashState(lk.name, want, nil); err != nil {
			return err
		}
		for _, h := range lk.handles {
			if n, err := h.holdCount(ctx); err != nil || int64(n) != want[h.owner] {
				return fmt.Errorf("%s.HoldCount = %d, %v; the model %d", h.label, n, err, want[h.owner])
			}
		}
		if lk.kind == "fairlock" {
			return r.absent(0, derived(keys.FairQueuePrefix, "f"), derived(keys.FairHeartbeatPrefix, "f"))
		}
	case "rwlock":
		want, extra := map[string]int64{}, map[string]string{}
		for _, h := range lk.handles {
			if h.count == 0 {
				continue
			}
			if h.side == exclusive {
				want[h.owner+":write"] += int64(h.count)
				extra["mode"] = "write"
			} else {
				want[h.owner] += int64(h.count)
				if extra["mode"] == "" {
					extra["mode"] = "read"
				}
			}
		}
		if err := r.hashState(lk.name, want, extra); err != nil {
			return err
		}
		for _, h := range lk.handles {
			if h.side != read || h.lost || h.peer.lost {
				continue
			}
			// A lost read hold's timeout key is left to expire by itself.
			stale := time.Since(lk.lostAt) < lease+time.Second
			tk, err := r.rawOn(0, "KEYS", "{rw}:"+h.owner+":rwlock_timeout:*").AsStrSlice()
			if err != nil || len(tk) < h.count || (len(tk) > h.count && !stale) {
				return fmt.Errorf("%s: %d read hold(s) in the model, timeout keys %v (%v)", h.label, h.count, tk, err)
			}
		}
		return r.absent(0, derived(keys.RWWritersPrefix, "rw"))
	case "multilock":
		if lk.uncertain() {
			return nil
		}
		want := []map[string]int64{{}, {}}
		for _, h := range lk.handles {
			if h.count > 0 {
				for i, c := range h.comps {
					want[i][c.owner] = int64(h.count)
				}
			}
		}
		for i, key := range lk.keys {
			if err := r.hashState(key, want[i], nil); err != nil {
				return err
			}
		}
		return r.absent(0, derived(keys.FairQueuePrefix, "{m}:b"), derived(keys.FairHeartbeatPrefix, "{m}:b"))
	case "semaphore":
		s := lk.handles[0].sem
		used, ids := 0, []string{}
		for _, h := range lk.handles {
			if h.count > 0 {
				used += h.count
				ids = append(ids, h.p.ID())
			}
		}
		avail, err := s.Available(ctx)
		if err != nil || avail != semCap-used {
			return fmt.Errorf("semaphore: Available = %d, %v; the model %d", avail, err, semCap-used)
		}
		holders, err := s.Holders(ctx)
		if err != nil {
			return fmt.Errorf("semaphore: Holders: %w", err)
		}
		got := []string{}
		for _, hd := range holders {
			got = append(got, hd.Owner)
		}
		sort.Strings(got)
		sort.Strings(ids)
		if fmt.Sprint(got) != fmt.Sprint(ids) {
			return fmt.Errorf("semaphore: holders %v, the model %v", got, ids)
		}
		return r.absent(0, derived(keys.SemQueuePrefix, "sem"), derived(keys.SemHeartbeatPrefix, "sem"))
	case "redlock":
		if !r.holds(lk) {
			for i := range 3 {
				if err := r.absent(i, "rl"); err != nil {
					return fmt.Errorf("redlock: free in the model: %w", err)
				}
			}
			return nil
		}
		// A quorum holds it (a node slower than the node timeout may have
		// been left out of the grant), and no node has another holder.
		holding := 0
		for i := range 3 {
			v, err := r.rawOn(i, "GET", "rl").ToString()
			pttl, _ := r.rawOn(i, "PTTL", "rl").AsInt64()
			switch {
			case err == nil && v == lk.redlockVal && pttl > 0:
				holding++
			case err == nil:
				return fmt.Errorf("redlock: node %d has %q (PTTL %d), the holder is %q", i, v, pttl, lk.redlockVal)
			}
		}
		if holding < 2 {
			return fmt.Errorf("redlock: only %d node(s) hold it for %q", holding, lk.redlockVal)
		}
	}
	return nil
}

// leaks fails on a key of server 0 that nothing may leave behind: one
// without an expiry (other than the semaphore's configuration) or one that
// lives for long.
func (r *run) leaks() error {
	all, err := r.rawOn(0, "KEYS", "*").AsStrSlice()
	if err != nil {
		return err
	}
	for _, k := range all {
		if k == "sem" || strings.HasPrefix(k, keys.RedlockTokenPrefix+":") {
			continue
		}
		pttl, _ := r.rawOn(0, "PTTL", k).AsInt64()
		if pttl == -1 || pttl > int64(time.Minute/time.Millisecond) {
			return fmt.Errorf("key %s left with PTTL %d ms", k, pttl)
		}
	}
	return nil
}

// leftovers, once everything is unlocked: only what may stay (tokens,
// the semaphore's configuration and its expiring bookkeeping, keys of
// holds lost earlier that expire by themselves).
func (r *run) leftovers() error {
	for _, lk := range r.locks {
		if lk.kind == "semaphore" {
			continue
		}
		if err := r.absent(0, lk.keys...); err != nil {
			return err
		}
	}
	if err := r.absent(1, "rl"); err != nil {
		return err
	}
	return r.absent(2, "rl")
}

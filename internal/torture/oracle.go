package torture

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/scripts"
	"github.com/redisync/redisync/internal/wakeup"
)

// Slacks of the timing oracles. Every time is taken by a goroutine that a
// loaded 2-core machine may deschedule for tens of milliseconds, so an
// oracle that compares two of them allows this much before it calls a
// violation.
const (
	// interferenceSlack widens a hold's window backwards when matching
	// faults: Enter is taken after Lock returned, and the fault may have
	// struck in between.
	interferenceSlack = 100 * time.Millisecond
	// lostSlack: a holder told of its loss at LostAt excuses an overlap with
	// a hold that began no earlier than LostAt − lostSlack. A loss signalled
	// late — after the lock had expired and been granted again — is not
	// excused.
	lostSlack = 100 * time.Millisecond
	// fifoSlack: a fair-lock waiter that called Lock this much before
	// another must be granted first. Generous: the call's timestamp is
	// taken before the first script joins the queue, and a goroutine may
	// stall in between (the strict order is fairlock's own test).
	fifoSlack = 250 * time.Millisecond
)

// interfered reports whether a fault took h's lock away during h.
func (r *runState) interfered(h hold) bool {
	for _, x := range r.hits {
		if x.until > 0 { // a span: any hold alive in it (hitSpan)
			if x.at <= h.Exit && x.until >= h.Enter-interferenceSlack {
				return true
			}
			continue
		}
		if (x.name == "" || slices.Contains(h.Names, x.name)) && x.at >= h.Enter-interferenceSlack && x.at <= h.Exit {
			return true
		}
	}
	return false
}

// excused reports whether an overlap of h with o breaks no NEVER result:
// h's holder was paused past its lease, had the lock taken away by a fault,
// or had been told it lost the lock by the time o began.
func (r *runState) excused(h, o hold) bool {
	return h.Paused || r.interfered(h) || (h.LostAt > 0 && o.Enter >= h.LostAt-lostSlack)
}

// forbidden reports whether holds in modes a and b may not overlap (permit
// holds are counted instead).
func forbidden(a, b string) bool {
	return a == modeExclusive || b == modeExclusive
}

// check runs the oracles.
func (r *runState) check(ctx context.Context) *Report {
	cfg := &r.cfg
	rep := &Report{Primitive: cfg.Primitive, Scenario: cfg.Scenario, Seed: cfg.Seed, Grants: len(r.holds),
		Faults: r.faults, Errors: r.errors, Hangs: r.hangs, Timeouts: r.timeouts,
		PartialHolds: r.partial, DoubleReleases: r.doubles, Leaks: []string{}}
	if isLifecycle(cfg.Scenario) {
		rep.Stuck = r.timeouts + r.stuck(ctx)
	}
	byName := map[string][]hold{}
	for _, h := range r.holds {
		for _, n := range h.Names {
			byName[n] = append(byName[n], h)
		}
		for _, out := range h.Write {
			if out == "accepted" {
				rep.FencedAccepted++
			}
		}
	}
	var handoffs []time.Duration
	for name, hs := range byName {
		sort.Slice(hs, func(i, j int) bool { return hs[i].Enter < hs[j].Enter })
		r.overlaps(rep, hs)
		for i := 1; i < len(hs); i++ {
			if hs[i].Mode == modeExclusive && hs[i].Enter >= hs[i-1].Exit && hs[i].Worker != hs[i-1].Worker {
				handoffs = append(handoffs, hs[i].Enter-hs[i-1].Exit)
			}
		}
		rep.StaleAccepted += staleAccepted(name, hs)
		if cfg.Primitive == "fairlock" && fifoApplies(cfg) {
			rep.FIFOInversions += fifoInversions(hs)
		}
		r.fenceTotals(ctx, rep, name, hs)
	}
	if len(handoffs) > 0 {
		slices.Sort(handoffs)
		rep.HandoffP50 = float64(handoffs[len(handoffs)/2]) / 1e6
		rep.HandoffP99 = float64(handoffs[len(handoffs)*99/100]) / 1e6
	}
	rep.RecoveryMax = r.recovery(byName)
	r.leaks(ctx, rep)
	return rep
}

// overlaps counts forbidden overlaps among one name's holds (sorted by
// Enter), and the most holds at once.
func (r *runState) overlaps(rep *Report, hs []hold) {
	for i := range hs {
		concurrent := 1
		for j := range i {
			if hs[j].Exit > hs[i].Enter {
				concurrent++
			}
		}
		rep.MaxConcurrent = max(rep.MaxConcurrent, concurrent)
		for j := i + 1; j < len(hs) && hs[j].Enter < hs[i].Exit; j++ {
			if !forbidden(hs[i].Mode, hs[j].Mode) {
				continue
			}
			rep.Overlaps++
			if !r.excused(hs[i], hs[j]) && !r.excused(hs[j], hs[i]) {
				rep.OverlapsUnexcused++
			}
		}
	}
	// Permits: at most Permits unexcused permit holds at any moment (the
	// most is reached at some hold's start).
	if len(hs) == 0 || hs[0].Mode != modePermit {
		return
	}
	for i, h := range hs {
		if h.Paused || r.interfered(h) {
			continue
		}
		n := 1
		for j := range i {
			if hs[j].Exit > h.Enter && !r.excused(hs[j], h) {
				n++
			}
		}
		if n > r.cfg.Permits {
			rep.Overlaps++
			rep.OverlapsUnexcused++
		}
	}
}

// staleAccepted counts accepted writes to name that the resource took after
// one with a higher token: in the resource's own order (the version each
// accepted write made), tokens must rise.
func staleAccepted(name string, hs []hold) int {
	type write struct {
		ver   int64
		token uint64
	}
	var ws []write
	for _, h := range hs {
		i := slices.Index(h.Names, name)
		if i < 0 || i >= len(h.Write) || h.Write[i] != "accepted" {
			continue
		}
		ws = append(ws, write{h.Vers[i], h.Tokens[i]})
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].ver < ws[j].ver })
	n := 0
	var top uint64
	for _, w := range ws {
		if w.token < top {
			n++
		}
		top = max(top, w.token)
	}
	return n
}

// fifoApplies: scenarios where a live waiter can lose its place for a good
// reason are left out — a partition or a server pause stops its heartbeats
// past the waiter timeout, and an amnesic restart empties the queue; on a
// Cluster, a killed master's shard is down past the waiter timeout, and a
// failover that may lose writes (without WaitReplicas) may lose queue
// places.
func fifoApplies(cfg *Config) bool {
	if cfg.Scenario == "cluster-kill-master" || cfg.WaitReplicas == 0 && lossyScenario(cfg.Scenario) {
		return false
	}
	return !slices.Contains([]string{"partition", "server-pause", "restart"}, cfg.Scenario)
}

// fifoInversions counts pairs of granted fair-lock waiters where the one
// that called Lock well before the other (fifoSlack) was granted after it.
// Holds are sorted by Enter (grant order).
func fifoInversions(hs []hold) int {
	n := 0
	for i := range hs {
		for j := i + 1; j < len(hs); j++ {
			// hs[i] was granted first; did hs[j] arrive well before it and
			// wait until after it was granted?
			if hs[j].Call+fifoSlack < hs[i].Call && hs[j].Worker != hs[i].Worker {
				n++
			}
		}
	}
	return n
}

// fenceTotals compares the resource's counters with what the holds did.
func (r *runState) fenceTotals(ctx context.Context, rep *Report, name string, hs []hold) {
	ver, stale, conflict, plain, err := r.res.totals(ctx, name)
	if err != nil {
		return
	}
	var accepted, wrote int64
	for _, h := range hs {
		i := slices.Index(h.Names, name)
		if h.Wrote {
			wrote++
		}
		if i >= 0 && i < len(h.Write) && h.Write[i] == "accepted" {
			accepted++
		}
	}
	// A child process killed inside a hold may have written without
	// telling: such writes raise the counters above what the holds report,
	// and cannot hide a lost update unless as many were lost.
	rep.FencedLost += max(0, accepted-ver)
	rep.FencedStale += stale
	rep.FencedConflicts += conflict
	rep.PlainLost += max(0, wrote-plain)
}

// recovery is the worst time, in ms, from a holder's crash until a lock
// it held was granted to someone else (a writer, for a read-write lock),
// or until a permit it held expired (see watchReclaim); and from a lock
// server's return until each name is granted again. A crash that follows
// another of the same name within two leases is not measured for locks:
// the two recoveries mix.
func (r *runState) recovery(byName map[string][]hold) float64 {
	var worst time.Duration
	for i, c := range r.crashes {
		for _, name := range c.names {
			if r.crashedJustBefore(i, name) {
				continue
			}
			for _, h := range byName[name] {
				if h.Enter > c.at && h.Mode == modeExclusive {
					worst = max(worst, h.Enter-c.at)
					break
				}
			}
		}
	}
	for _, d := range r.reclaims {
		worst = max(worst, d)
	}
	// A lock server back from a pause or a restart: how long until each
	// name is granted again.
	for _, back := range r.outages {
		for _, hs := range byName {
			for _, h := range hs {
				if h.Enter > back && h.Mode == modeExclusive {
					worst = max(worst, h.Enter-back)
					break
				}
			}
		}
	}
	return float64(worst) / 1e6
}

// watchReclaim follows a crashed permit in Redis until its lease has run
// out by the server's clock (its expiry score passed: any acquire takes it
// back then) or it is gone, and records how long that took after the
// crash. A permit still live after five leases is a leak.
func (r *runState) watchReclaim(h hold) {
	if h.Mode != modePermit || h.ID == "" || len(h.Names) == 0 {
		return
	}
	key, _ := keys.Derived(keys.SemHoldersPrefix, h.Names[0])
	admin := r.admins[0]
	r.watchers.Add(1)
	go func() {
		defer r.watchers.Done()
		ctx := context.Background()
		deadline := h.Exit + 5*r.cfg.Lease
		for r.now() < deadline {
			// The permit's expiry and the server's clock, in one round trip.
			res := admin.DoMulti(ctx, admin.B().Zscore().Key(key).Member(h.ID).Build(), admin.B().Time().Build())
			score, err := res[0].AsFloat64()
			now, terr := serverMillis(res[1])
			if rueidis.IsRedisNil(err) || (err == nil && terr == nil && score <= float64(now)) {
				r.mu.Lock()
				r.reclaims = append(r.reclaims, r.now()-h.Exit)
				r.mu.Unlock()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		r.mu.Lock()
		r.reclaims = append(r.reclaims, -1)
		r.mu.Unlock()
	}()
}

// serverMillis reads a TIME reply in ms.
func serverMillis(res rueidis.RedisResult) (int64, error) {
	t, err := res.AsIntSlice()
	if err != nil || len(t) != 2 {
		return 0, fmt.Errorf("TIME: %v", err)
	}
	return t[0]*1000 + t[1]/1000, nil
}

// crashedJustBefore reports whether another crash struck name within the
// two leases before crash i.
func (r *runState) crashedJustBefore(i int, name string) bool {
	for _, o := range r.crashes[:i] {
		if r.crashes[i].at-o.at < 2*r.cfg.Lease && slices.Contains(o.names, name) {
			return true
		}
	}
	return false
}

// leaks: after Close and one lease (and the subscription linger), nothing
// of the run may be left — no renewal, no subscription, no key (fencing
// counters excepted, redlock's and the last token a release keeps: they
// are meant to outlive holds, with an expiry; and a semaphore's
// configuration), no key without expiry.
func (r *runState) leaks(ctx context.Context, rep *Report) {
	for _, w := range r.workers {
		w.mu.Lock()
		clients := w.clients
		w.mu.Unlock()
		for _, c := range clients {
			_ = c.Close()
			e := engine.FromClient(c)
			if n := e.Watchdog.Len(); n > 0 {
				rep.Leaks = append(rep.Leaks, fmt.Sprintf("%d renewals registered after Close", n))
			}
			if n := e.Hub.Channels(); n > 0 {
				rep.Leaks = append(rep.Leaks, fmt.Sprintf("%d subscriptions after Close", n))
			}
		}
	}
	for _, d := range r.reclaims {
		if d < 0 {
			rep.Leaks = append(rep.Leaks, "a crashed holder's permit was still live five leases later")
		}
	}
	if r.childLeaks > 0 {
		rep.Leaks = append(rep.Leaks, fmt.Sprintf("%d renewals or subscriptions left in child processes after Close", r.childLeaks))
	}
	// A command a slow link still held when the run ended lands up to
	// maxDelay later (an acquire nobody waits for any more: its key must
	// expire by itself within its lease).
	time.Sleep(r.maxDelay + r.cfg.Lease + wakeup.Linger)
	lastToken := keys.LockTokenPrefix + ":"
	record := keys.HolderInfoPrefix + ":"
	semHolders, semPermits := keys.SemHoldersPrefix+":", keys.SemPermitsPrefix+":"
	for node, admin := range r.admins {
		if r.cfg.Cluster != nil && !isMaster(ctx, admin) {
			continue // a replica (its master has every key it has, and PTTL there would be MOVED), or a killed node not back yet
		}
		keys, err := admin.Do(ctx, admin.B().Keys().Pattern("*"+r.prefix+"*").Build()).AsStrSlice()
		if err != nil {
			rep.Leaks = append(rep.Leaks, fmt.Sprintf("node %d: %v", node, err))
			continue
		}
		for _, k := range keys {
			pttl, _ := admin.Do(ctx, admin.B().Pttl().Key(k).Build()).AsInt64()
			switch {
			case pttl == -2: // expired meanwhile
			case pttl == -1 && r.cfg.Primitive == "semaphore" && slices.Contains(r.names, k):
				// A semaphore's own key is its configuration (capacity,
				// last token), kept without expiry by design; the run's
				// are removed here.
				_ = admin.Do(ctx, admin.B().Del().Key(k).Build()).Error()
			case pttl == -1:
				rep.Leaks = append(rep.Leaks, fmt.Sprintf("node %d: %s has no expiry", node, k))
			case strings.HasPrefix(k, lastToken):
				// The last fencing token, which every release that deletes a
				// lock keeps for 10 s by design (lib.lua keep_token), with
				// an expiry (checked above).
			case r.cfg.Primitive == "semaphore" && (strings.HasPrefix(k, semHolders) || strings.HasPrefix(k, semPermits)) &&
				time.Duration(pttl)*time.Millisecond <= scripts.SemHorizon*r.cfg.Lease && !livePermits(ctx, admin, k):
				// The holders and permits of a semaphore whose last holders
				// stopped renewing (Close, a crash): their permits came back
				// within a lease (none is live), and the two keys expire
				// within scripts.SemHorizon leases of their last renewal.
			case lossyScenario(r.cfg.Scenario) && strings.HasPrefix(k, record) &&
				time.Duration(pttl)*time.Millisecond <= engine.RecordTTL(r.cfg.Lease):
				// A holder record whose delete a failover lost (or whose
				// write landed on the new master after the release): it
				// expires by itself within RecordTTL, the records' rule
				// for a holder that never released.
			case !strings.HasPrefix(k, "redisync_redlock_token:"):
				rep.Leaks = append(rep.Leaks, fmt.Sprintf("node %d: %s left with PTTL %d", node, k, pttl))
			}
		}
		// The workers' connections are still open here (closed at
		// teardown), so a channel still subscribed means a hub kept it.
		channels, err := admin.Do(ctx, admin.B().PubsubChannels().Pattern("*"+r.prefix+"*").Build()).AsStrSlice()
		if err == nil && len(channels) > 0 {
			rep.Leaks = append(rep.Leaks, fmt.Sprintf("node %d: channels still subscribed: %v", node, channels))
		}
	}
}

// livePermits reports whether the semaphore key k (its holders zset, or its
// permits hash: then the zset beside it) holds a permit whose expiry has
// not passed by the server's clock.
func livePermits(ctx context.Context, admin rueidis.Client, k string) bool {
	holders := k
	if rest, ok := strings.CutPrefix(k, keys.SemPermitsPrefix); ok {
		holders = keys.SemHoldersPrefix + rest
	}
	now, err := serverMillis(admin.Do(ctx, admin.B().Time().Build()))
	if err != nil {
		return true
	}
	live, err := admin.Do(ctx, admin.B().Zcount().Key(holders).Min("("+strconv.FormatInt(now, 10)).Max("+inf").Build()).AsInt64()
	return err != nil || live > 0
}

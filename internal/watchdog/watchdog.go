package watchdog

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// Renewer extends a batch of leases in as few round trips as it can. It
// returns one Result per lease, in the order given: each lease is judged by
// its own reply only, so a command that fails (an error reply, a slow or
// unreachable node) makes only the leases it carried Unknown. A Renewer must
// return when ctx ends; a reply that does not have one Result per lease
// counts as Unknown for all of them. A Renewer does not keep the leases
// slice past its return: the engine reuses its array for a later round.
type Renewer interface {
	Renew(ctx context.Context, leases []*Lease) []Result
}

// Lease is one hold under the engine's care. Set the exported fields before
// Add and do not change them afterwards.
type Lease struct {
	TTL time.Duration
	// Renewer renews the lease. A Fixed lease has none, or one that the
	// engine hands it to once, at TTL/3, for work that does not extend it
	// (its holder record); the result of that is not judged.
	Renewer Renewer
	Target  any  // what the Renewer needs (key, owner, token)
	Fixed   bool // never renewed; only its deadline is watched

	// Owned by the engine, guarded by Watchdog.mu. The times are monoNs:
	// a round reads them for thousands of leases, and a time.Time is three
	// words and a monotonic-clock branch per comparison. They follow the
	// fields a round reads in the same look (a round touches each of its
	// leases, scattered over the heap: a cache line saved is a miss saved
	// per lease).
	inflight  bool
	active    bool
	backoff   bool    // due is a retry time after a failed renewal: not batched early
	handover  bool    // a Fixed lease with a Renewer, not handed over yet
	confirmed int64   // when the lease was last confirmed
	due       int64   // when it is to be renewed
	deadline  int64   // when it is lost without a renewal
	pos       int     // its place in the byDeadline heap, -1 for none
	bucket    *bucket // its due time's bucket while it waits to be sent
	bidx      int     // its place in bucket
	flight    *flight // the round it was last sent in

	// OnLost is called once, from the engine's goroutine, when the hold is
	// lost (err is the cause). It must not block. Notify, when set, is
	// called instead: Notify.Lost(l, err) (an owner of many leases is told
	// without a closure per lease).
	OnLost func(err error)
	Notify Notifier
}

// Notifier is told when a lease is lost (see Lease.OnLost).
type Notifier interface {
	Lost(l *Lease, err error)
}

// lost tells l's owner that l was lost.
func (l *Lease) lost(err error) {
	if l.Notify != nil {
		l.Notify.Lost(l, err)
		return
	}
	l.OnLost(err)
}

// Drift is the safety margin subtracted from a lease: 1% of it plus 2 ms.
func Drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// RetryInterval is the pace of retries after a renewal got no answer:
// a tenth of the lease, at most MaxRetryInterval. Each retry waits this long
// plus up to RetryJitter of it more, drawn once per failed batch.
func RetryInterval(ttl time.Duration) time.Duration { return min(ttl/10, MaxRetryInterval) }

const (
	// MaxEarly is how many leases a round takes before leases that are not
	// due yet stop riding along early (within the batching window): batching
	// amortizes a script call over its holds, which a few hundred already
	// do, and with many holds the window would otherwise gather them all
	// into one round sent up to TTL/6 early — twice the renewals, in a
	// round that may not be answered within its wait bound. Due leases
	// always go.
	MaxEarly = 4096
	// MaxRetryInterval caps RetryInterval for long leases.
	MaxRetryInterval = time.Second
	// RetryJitter is the largest extra share of RetryInterval a retry waits,
	// so Clients that lost the same server do not retry in step.
	RetryJitter = 0.25
)

// Watchdog renews leases in batches; see the package doc.
type Watchdog struct {
	lostErr error // reported to every lease on Close

	mu sync.Mutex
	// byDue holds the leases waiting to be sent (not in flight; a Fixed
	// lease only until its handover) by their due time; flights, the
	// rounds in flight, each by the earliest deadline it carries;
	// byDeadline, by their deadlines, the other leases whose deadline can
	// come first: in backoff, Fixed. The loop looks only at their fronts.
	// (A lease that waits for a renewal due before its deadline is sent
	// first, and looked at then.) See schedule.go.
	byDue      dueSchedule
	byDeadline deadlineHeap
	flights    []*flight
	count      int   // registered leases
	wakeAt     int64 // when the loop will next wake (monoNs; 0: not scheduled)
	closed     bool

	kick   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// ErrClosed is returned by Add after Close.
var ErrClosed = errors.New("watchdog: closed")

// New starts an engine. closeErr is what leases still registered at Close
// are told they lost.
func New(closeErr error) *Watchdog {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watchdog{
		lostErr: closeErr,
		kick:    make(chan struct{}, 1),
		ctx:     ctx,
		cancel:  cancel,
	}
	w.wg.Add(1)
	go w.loop()
	return w
}

// Add registers l, whose lease was confirmed at the given time.
func (w *Watchdog) Add(l *Lease, confirmed time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	l.active = true
	l.inflight = false
	l.handover = l.Fixed && l.Renewer != nil
	l.pos, l.bucket, l.flight = -1, nil, nil
	w.count++
	w.byDue.arrays.limit = w.count
	w.confirmLocked(l, monoNs(confirmed))
	return nil
}

// Confirm records that l's lease was extended to at least confirmed + TTL
// (a reentrant acquisition does that). It never moves the schedule back.
func (w *Watchdog) Confirm(l *Lease, confirmed time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c := monoNs(confirmed); l.active && c > l.confirmed {
		w.confirmLocked(l, c)
	}
}

// Remove stops watching l. It reports false if l was not registered (it was
// lost, or never added); after Remove returns, OnLost is not called for l.
func (w *Watchdog) Remove(l *Lease) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !l.active {
		return false
	}
	w.dropLocked(l)
	return true
}

// Len reports how many leases are registered.
func (w *Watchdog) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

// Close stops the engine, reports every remaining lease as lost with the
// close error, and waits for the loop and every renewal in flight.
func (w *Watchdog) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	lost := w.takeAllLocked()
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
	for _, l := range lost {
		l.lost(w.lostErr)
	}
}

func (w *Watchdog) confirmLocked(l *Lease, confirmed int64) {
	l.confirmed = confirmed
	l.deadline = confirmed + int64(l.TTL-Drift(l.TTL))
	l.due = confirmed + int64(l.TTL/3)
	l.backoff = false
	w.placeLocked(l)
}

// placeLocked files l by its deadline and, while it waits to be sent, its
// due time, and wakes the loop if that is sooner than planned. A lease in
// flight is watched by its flight (a Confirm meanwhile only moves its
// deadline later, which its flight finds when it looks).
func (w *Watchdog) placeLocked(l *Lease) {
	if !l.active || l.inflight {
		return
	}
	waiting := !l.Fixed || l.handover
	next := l.deadline
	if !waiting || l.backoff || l.due >= l.deadline {
		w.byDeadline.set(l, l.deadline)
	} else {
		w.byDeadline.drop(l)
	}
	if waiting {
		if b := l.bucket; b == nil || b.key != (bucketKey{at: l.due, backoff: l.backoff}) {
			w.byDue.drop(l)
			w.byDue.add(l)
		}
		next = min(next, l.due)
	} else {
		w.byDue.drop(l)
	}
	w.wakeByLocked(next)
}

// dropLocked ends l's registration: out of the schedule (a flight that
// carries it finds it inactive).
func (w *Watchdog) dropLocked(l *Lease) {
	l.active = false
	w.count--
	w.byDue.arrays.limit = w.count
	w.byDeadline.drop(l)
	w.byDue.drop(l)
}

// retryLocked schedules l's next attempt after a renewal that got no answer
// for it: one RetryInterval from now, stretched by the batch's jitter. The
// lease is in backoff until then, so the batching window cannot pull it
// forward (that made a failed renewal due again at once: a tight loop of
// scripts, or of dials while the server was down).
func (w *Watchdog) retryLocked(l *Lease, now int64, jitter float64) {
	l.due = now + int64(float64(RetryInterval(l.TTL))*(1+jitter))
	l.backoff = true
	w.placeLocked(l)
}

// wakeByLocked makes the loop wake by t if it planned to sleep longer.
func (w *Watchdog) wakeByLocked(t int64) {
	if w.wakeAt == 0 || t < w.wakeAt {
		w.kickLoop()
	}
}

// isDueLocked reports whether l should go out in a batch sent at now: a
// lease in backoff at its retry time, any other lease when its due time is
// within half a renewal interval (TTL/6), so holds taken at different
// moments ride in the same batch.
func isDueLocked(l *Lease, now int64) bool {
	if l.backoff {
		return now >= l.due
	}
	return now+int64(l.TTL/6) >= l.due
}

func (w *Watchdog) takeAllLocked() []*Lease {
	all := make([]*Lease, 0, w.count)
	for _, e := range w.byDeadline.e {
		e.v.pos = -1
		all = append(all, e.v)
	}
	w.byDeadline = deadlineHeap{}
	all = w.byDue.all(all)
	for _, f := range w.flights {
		for _, l := range f.leases {
			if f.carries(l) {
				all = append(all, l)
			}
		}
	}
	lost := all[:0]
	for _, l := range all {
		if l.active { // each lease once: it is in one place at a time
			l.active = false
			lost = append(lost, l)
		}
	}
	w.count = 0
	return lost
}

func (w *Watchdog) loop() {
	defer w.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := w.tick(time.Now())
		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), 0)
		}
		timer.Reset(wait)
		select {
		case <-w.ctx.Done():
			return
		case <-w.kick:
		case <-timer.C:
		}
	}
}

// tick reports lost leases, starts due renewals, and returns when to wake
// next. It looks only at the fronts of the schedule: the leases whose
// deadline has passed, or that are due (with the batching window); a lease
// sent in a batch is watched by its flight until its result is in.
func (w *Watchdog) tick(at time.Time) time.Time {
	now := monoNs(at)
	var lost []*Lease
	var rounds []*flight // this round's batches, one per Renewer
	var held []*Lease    // popped but not sent: back into the schedule below
	sent := 0            // leases in this round's batches

	w.mu.Lock()
	for w.byDeadline.len() > 0 {
		l := w.byDeadline.front()
		if now < l.deadline {
			break
		}
		w.dropLocked(l)
		lost = append(lost, l)
	}
	lost = w.expireFlightsLocked(now, lost)
	for b := w.byDue.front(); b != nil; b = w.byDue.front() {
		l := b.leases[len(b.leases)-1] // the last: dropped without moving another
		switch {
		case now >= l.deadline: // the loop was late (a stalled process)
			w.dropLocked(l)
			lost = append(lost, l)
			continue
		case now >= l.due, sent > 0 && sent < MaxEarly && !l.backoff && isDueLocked(l, now):
			// Due, or due soon and riding with a round that goes anyway.
			w.byDue.drop(l)
			rounds = w.sendLocked(l, rounds, now)
			sent++
			continue
		case l.backoff && now+int64(RetryInterval(l.TTL)/2) >= l.due:
			w.byDue.drop(l)
			held = append(held, l) // may join a batch (below)
			continue
		}
		// Every other lease is due later still (or the round is full: a
		// lease not due yet goes in the next round, not early).
		break
	}
	// A lease in backoff joins a batch that goes to its Renewer anyway when
	// its retry is less than half a retry interval away. Leases that failed
	// in different batches (every batch fails while a server is down) so
	// converge on one round trip per retry interval, not one per batch.
	for _, l := range held {
		if roundOf(rounds, l.Renewer) != nil {
			rounds = w.sendLocked(l, rounds, now)
		} else {
			w.byDue.add(l)
		}
	}
	// The flights' watches and wait bounds read deadlines, which Confirm
	// may move: under mu.
	for _, f := range rounds {
		f.watch()
	}
	w.flights = append(w.flights, rounds...)
	var next int64
	if w.byDeadline.len() > 0 {
		next = w.byDeadline.front().deadline
	}
	if b := w.byDue.front(); b != nil {
		next = earliest(next, b.leases[0].due)
	}
	for _, f := range w.flights {
		next = earliest(next, f.deadline)
	}
	w.wakeAt = next
	w.mu.Unlock()
	var wake time.Time
	if next != 0 {
		wake = epoch.Add(time.Duration(next))
	}

	for _, l := range lost {
		l.lost(ErrLost)
	}
	for _, f := range rounds {
		w.wg.Add(1)
		go w.renew(f, now)
	}
	return wake
}

// earliest is the earlier of a and b, where 0 means none.
func earliest(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// roundOf returns the flight of rounds that goes to r, or nil.
func roundOf(rounds []*flight, r Renewer) *flight {
	for _, f := range rounds {
		if f.r == r {
			return f
		}
	}
	return nil
}

// sendLocked puts l, taken out of byDue, in its Renewer's batch of this
// round (sent at now), which watches its deadline while the renewal is in
// flight.
func (w *Watchdog) sendLocked(l *Lease, rounds []*flight, now int64) []*flight {
	l.inflight = true
	l.handover = false
	w.byDeadline.drop(l)
	f := roundOf(rounds, l.Renewer)
	if f == nil {
		_, stream := l.Renewer.(StreamRenewer)
		f = &flight{r: l.Renewer, stream: stream, leases: w.byDue.arrays.take()}
		rounds = append(rounds, f)
	}
	f.add(l, now)
	return rounds
}

// expireFlightsLocked finds the leases in flight whose deadline has
// passed, adds them to lost, and moves each flight's watch to the earliest
// deadline it still carries. It looks into a flight only when its watch is
// due (the rounds in flight are few, their leases many).
func (w *Watchdog) expireFlightsLocked(now int64, lost []*Lease) []*Lease {
	for _, f := range w.flights {
		if f.deadline == 0 || now < f.deadline {
			continue
		}
		f.deadline = 0
		for _, l := range f.leases {
			if !f.carries(l) {
				continue
			}
			if now >= l.deadline {
				w.dropLocked(l)
				lost = append(lost, l)
				continue
			}
			f.deadline = earliest(f.deadline, l.deadline)
		}
	}
	return lost
}

// land takes f, whose renewal has returned and whose leases are all
// settled, off the flights.
func (w *Watchdog) land(f *flight) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, g := range w.flights {
		if g == f {
			last := len(w.flights) - 1
			w.flights[i] = w.flights[last]
			w.flights[last] = nil
			w.flights = w.flights[:last]
			break
		}
	}
	w.byDue.arrays.put(f.leases) // the Renewer keeps no lease of it (see Renewer)
	f.leases = nil
}

// ErrLost is passed to OnLost when a hold is gone or its deadline passed.
var ErrLost = errors.New("watchdog: lease lost")

// errShortReply stands for a Renewer that broke its contract.
var errShortReply = errors.New("watchdog: renewer returned a result count that does not match the batch")

// errNoResult stands for a lease a StreamRenewer returned without reporting.
var errNoResult = errors.New("watchdog: renewer reported no result for the lease")

// renew sends one batch and settles each lease by its result. A
// StreamRenewer hands results over as they arrive, so a lease whose reply is
// in is settled then, not when the slowest command of the batch (a paused
// shard, a stalled Redlock node) answers or times out.
func (w *Watchdog) renew(f *flight, sent int64) {
	defer w.wg.Done()
	defer w.land(f)
	batch := f.leases
	jitter := rand.Float64() * RetryJitter // one draw per batch keeps its leases together
	ctx, cancel := context.WithDeadline(w.ctx, f.bound)
	defer cancel()
	switch r := f.r.(type) {
	case PartRenewer:
		w.renewParts(ctx, r, batch, sent, jitter)
		return
	case StreamRenewer:
		w.renewEach(ctx, r, batch, sent, jitter)
		return
	}
	results := f.r.Renew(ctx, batch)
	if len(results) != len(batch) {
		results = Unknowns(len(batch), errShortReply)
	}
	w.settle(batch, nil, results, sent, jitter)
}

func (w *Watchdog) renewEach(ctx context.Context, s StreamRenewer, batch []*Lease, sent int64, jitter float64) {
	var mu sync.Mutex
	reported := make([]bool, len(batch))
	s.RenewEach(ctx, batch, func(i int, res Result) {
		mu.Lock()
		first := i >= 0 && i < len(batch) && !reported[i]
		if first {
			reported[i] = true
		}
		mu.Unlock()
		if first {
			w.settle(batch[i:i+1], nil, []Result{res}, sent, jitter)
		}
	})
	w.settleRest(&mu, batch, reported, sent, jitter)
}

// renewParts is renewEach for a PartRenewer: each part's leases are
// settled together, under one lock.
func (w *Watchdog) renewParts(ctx context.Context, p PartRenewer, batch []*Lease, sent int64, jitter float64) {
	var mu sync.Mutex
	reported := make([]bool, len(batch))
	p.RenewParts(ctx, batch, func(idx []int, res []Result) {
		if len(res) != len(idx) {
			return // a contract broken: its leases count as unreported
		}
		mu.Lock()
		fresh := true // every lease of the part is reported for the first time
		for _, i := range idx {
			if i < 0 || i >= len(batch) || reported[i] {
				fresh = false
				break
			}
		}
		if !fresh {
			// Keep only the first reports (a contract broken).
			var keep []int
			var kept []Result
			for j, i := range idx {
				if i >= 0 && i < len(batch) && !reported[i] {
					reported[i] = true
					keep, kept = append(keep, i), append(kept, res[j])
				}
			}
			idx, res = keep, kept
		} else {
			for _, i := range idx {
				reported[i] = true
			}
		}
		mu.Unlock()
		w.settle(batch, idx, res, sent, jitter)
	})
	w.settleRest(&mu, batch, reported, sent, jitter)
}

// settleRest settles as Unknown the leases of batch that a StreamRenewer
// returned without reporting.
func (w *Watchdog) settleRest(mu *sync.Mutex, batch []*Lease, reported []bool, sent int64, jitter float64) {
	mu.Lock()
	var rest []*Lease
	for i, done := range reported {
		if !done {
			reported[i] = true // a late report (a contract broken) is ignored
			rest = append(rest, batch[i])
		}
	}
	mu.Unlock()
	w.settle(rest, nil, Unknowns(len(rest), errNoResult), sent, jitter)
}

// settle applies results[j] to leases[idx[j]] (to leases[j] when idx is
// nil): a renewal sent at sent (monoNs).
func (w *Watchdog) settle(leases []*Lease, idx []int, results []Result, sent int64, jitter float64) {
	if len(results) == 0 {
		return
	}
	var lost []*Lease
	now := monoNs(time.Now())
	w.mu.Lock()
	for j := range results {
		l := leases[j]
		if idx != nil {
			l = leases[idx[j]]
		}
		l.inflight = false
		if !l.active {
			continue // removed or lost while the renewal was in flight
		}
		switch {
		case l.Fixed: // handed over for its record: not judged
			w.placeLocked(l)
		case results[j].Status == Alive:
			if sent > l.confirmed { // a Confirm in flight may be newer
				w.confirmLocked(l, sent)
			} else {
				w.placeLocked(l)
			}
		case results[j].Status == Gone:
			w.dropLocked(l)
			lost = append(lost, l)
		default:
			w.retryLocked(l, now, jitter)
		}
	}
	w.mu.Unlock()
	for _, l := range lost {
		l.lost(ErrLost)
	}
}

func (w *Watchdog) kickLoop() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

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
// counts as Unknown for all of them.
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
	Fixed   bool // never renewed; only its deadline is watched
	Target  any  // what the Renewer needs (key, owner, token)
	// OnLost is called once, from the engine's goroutine, when the hold is
	// lost (err is the cause). It must not block.
	OnLost func(err error)

	// Owned by the engine, guarded by Watchdog.mu.
	confirmed time.Time
	due       time.Time
	deadline  time.Time
	inflight  bool
	active    bool
	backoff   bool   // due is a retry time after a failed renewal: not batched early
	handover  bool   // a Fixed lease with a Renewer, not handed over yet
	pos       [2]int // its places in the byDeadline and byDue heaps, -1 for none
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
	// lease only until its handover) by their due time; byDeadline, by
	// their deadlines, the leases whose deadline can come first: in flight,
	// in backoff, Fixed. The loop looks only at their fronts. (A lease that
	// waits for a renewal due before its deadline is sent first, and looked
	// at then: keeping every lease by its deadline too would move it down
	// that heap at each renewal.)
	byDeadline, byDue leaseHeap
	count             int       // registered leases
	wakeAt            time.Time // when the loop will next wake (zero: not scheduled)
	closed            bool

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
		lostErr:    closeErr,
		kick:       make(chan struct{}, 1),
		byDeadline: leaseHeap{which: byDeadline},
		byDue:      leaseHeap{which: byDue},
		ctx:        ctx,
		cancel:     cancel,
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
	l.pos = [2]int{-1, -1}
	w.count++
	w.confirmLocked(l, confirmed)
	return nil
}

// Confirm records that l's lease was extended to at least confirmed + TTL
// (a reentrant acquisition does that). It never moves the schedule back.
func (w *Watchdog) Confirm(l *Lease, confirmed time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l.active && confirmed.After(l.confirmed) {
		w.confirmLocked(l, confirmed)
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
		l.OnLost(w.lostErr)
	}
}

func (w *Watchdog) confirmLocked(l *Lease, confirmed time.Time) {
	l.confirmed = confirmed
	l.deadline = confirmed.Add(l.TTL - Drift(l.TTL))
	l.due = confirmed.Add(l.TTL / 3)
	l.backoff = false
	w.placeLocked(l)
}

// placeLocked files l in the heaps by its deadline and, while it waits to
// be sent, its due time, and wakes the loop if that is sooner than planned.
func (w *Watchdog) placeLocked(l *Lease) {
	if !l.active {
		return
	}
	waiting := !l.inflight && (!l.Fixed || l.handover)
	next := l.deadline
	if !waiting || l.backoff || !l.due.Before(l.deadline) {
		w.byDeadline.set(l, l.deadline)
	} else {
		w.byDeadline.drop(l)
	}
	if waiting {
		w.byDue.set(l, l.due)
		next = minTime(next, l.due)
	} else {
		w.byDue.drop(l)
	}
	w.wakeByLocked(next)
}

// dropLocked ends l's registration: out of both heaps.
func (w *Watchdog) dropLocked(l *Lease) {
	l.active = false
	w.count--
	w.byDeadline.drop(l)
	w.byDue.drop(l)
}

// retryLocked schedules l's next attempt after a renewal that got no answer
// for it: one RetryInterval from now, stretched by the batch's jitter. The
// lease is in backoff until then, so the batching window cannot pull it
// forward (that made a failed renewal due again at once: a tight loop of
// scripts, or of dials while the server was down).
func (w *Watchdog) retryLocked(l *Lease, now time.Time, jitter float64) {
	l.due = now.Add(time.Duration(float64(RetryInterval(l.TTL)) * (1 + jitter)))
	l.backoff = true
	w.placeLocked(l)
}

// wakeByLocked makes the loop wake by t if it planned to sleep longer.
func (w *Watchdog) wakeByLocked(t time.Time) {
	if w.wakeAt.IsZero() || t.Before(w.wakeAt) {
		w.kickLoop()
	}
}

// isDueLocked reports whether l should go out in a batch sent at now: a
// lease in backoff at its retry time, any other lease when its due time is
// within half a renewal interval (TTL/6), so holds taken at different
// moments ride in the same batch.
func isDueLocked(l *Lease, now time.Time) bool {
	if l.backoff {
		return !now.Before(l.due)
	}
	return !now.Add(l.TTL / 6).Before(l.due)
}

func (w *Watchdog) takeAllLocked() []*Lease {
	lost := make([]*Lease, 0, w.count)
	for _, h := range []*leaseHeap{&w.byDeadline, &w.byDue} {
		for _, e := range h.e {
			if e.l.active {
				e.l.active = false
				lost = append(lost, e.l)
			}
		}
		h.e = nil
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
// next. It looks only at the leases at the front of the heap: those whose
// deadline has passed, or that are due (with the batching window); a lease
// sent in a batch goes back by its deadline until its result is in.
func (w *Watchdog) tick(now time.Time) time.Time {
	var lost []*Lease
	batches := map[Renewer][]*Lease{}
	var held []*Lease // popped but not sent: back into the heap below
	sent := 0         // leases in this round's batches

	w.mu.Lock()
	for w.byDeadline.len() > 0 {
		l := w.byDeadline.e[0].l
		if now.Before(l.deadline) {
			break
		}
		w.dropLocked(l)
		lost = append(lost, l)
	}
	for w.byDue.len() > 0 {
		l := w.byDue.e[0].l
		switch {
		case !now.Before(l.deadline): // the loop was late (a stalled process)
			w.dropLocked(l)
			lost = append(lost, l)
			continue
		case !now.Before(l.due), sent > 0 && sent < MaxEarly && !l.backoff && isDueLocked(l, now):
			// Due, or due soon and riding with a round that goes anyway.
			w.byDue.drop(l)
			w.sendLocked(l, batches)
			sent++
			continue
		case l.backoff && !now.Add(RetryInterval(l.TTL)/2).Before(l.due):
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
		if _, ok := batches[l.Renewer]; ok {
			w.sendLocked(l, batches)
		} else {
			w.byDue.set(l, l.due)
		}
	}
	var next time.Time
	if w.byDeadline.len() > 0 {
		next = w.byDeadline.e[0].l.deadline
	}
	if w.byDue.len() > 0 && (next.IsZero() || w.byDue.e[0].l.due.Before(next)) {
		next = w.byDue.e[0].l.due
	}
	w.wakeAt = next
	// The wait bounds read deadlines, which Confirm may move: under mu.
	bounds := make(map[Renewer]time.Time, len(batches))
	for r, batch := range batches {
		_, stream := r.(StreamRenewer)
		bounds[r] = waitBound(batch, now, stream)
	}
	w.mu.Unlock()

	for _, l := range lost {
		l.OnLost(ErrLost)
	}
	for r, batch := range batches {
		w.wg.Add(1)
		go w.renew(r, batch, now, bounds[r])
	}
	return next
}

// sendLocked puts l, taken out of byDue, in its Renewer's batch, and in
// byDeadline while the renewal is in flight.
func (w *Watchdog) sendLocked(l *Lease, batches map[Renewer][]*Lease) {
	l.inflight = true
	l.handover = false
	batches[l.Renewer] = append(batches[l.Renewer], l)
	w.placeLocked(l)
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
func (w *Watchdog) renew(r Renewer, batch []*Lease, sent, bound time.Time) {
	defer w.wg.Done()
	jitter := rand.Float64() * RetryJitter // one draw per batch keeps its leases together
	ctx, cancel := context.WithDeadline(w.ctx, bound)
	defer cancel()
	if s, ok := r.(StreamRenewer); ok {
		w.renewEach(ctx, s, batch, sent, jitter)
		return
	}
	results := r.Renew(ctx, batch)
	if len(results) != len(batch) {
		results = Unknowns(len(batch), errShortReply)
	}
	w.settle(batch, results, sent, jitter)
}

func (w *Watchdog) renewEach(ctx context.Context, s StreamRenewer, batch []*Lease, sent time.Time, jitter float64) {
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
			w.settle(batch[i:i+1], []Result{res}, sent, jitter)
		}
	})
	mu.Lock()
	var rest []*Lease
	for i, done := range reported {
		if !done {
			reported[i] = true // a late report (a contract broken) is ignored
			rest = append(rest, batch[i])
		}
	}
	mu.Unlock()
	w.settle(rest, Unknowns(len(rest), errNoResult), sent, jitter)
}

// settle applies results[i] to leases[i]: a renewal sent at sent.
func (w *Watchdog) settle(leases []*Lease, results []Result, sent time.Time, jitter float64) {
	if len(leases) == 0 {
		return
	}
	var lost []*Lease
	now := time.Now()
	w.mu.Lock()
	for i, l := range leases {
		l.inflight = false
		if !l.active {
			continue // removed or lost while the renewal was in flight
		}
		switch {
		case l.Fixed: // handed over for its record: not judged
			w.placeLocked(l)
		case results[i].Status == Alive:
			if sent.After(l.confirmed) { // a Confirm in flight may be newer
				w.confirmLocked(l, sent)
			} else {
				w.placeLocked(l)
			}
		case results[i].Status == Gone:
			w.dropLocked(l)
			lost = append(lost, l)
		default:
			w.retryLocked(l, now, jitter)
		}
	}
	w.mu.Unlock()
	for _, l := range lost {
		l.OnLost(ErrLost)
	}
}

// waitBound is how long a renewal waits for its replies, at most a third of
// a lease after it was sent: a command that hangs (a paused shard) is given
// up then, and its leases, which were due, are retried well before their
// deadlines. A Renewer that returns all results at once is waited for no
// longer than the earliest deadline in its batch and a third of the
// shortest lease (the answers for every lease of the batch wait for the
// slowest command). A StreamRenewer settles each lease as its answer
// arrives, so the batch is waited for as long as any of its leases can
// still use an answer: no lease's wait is cut short by a neighbour's
// deadline (those leases are lost at their deadlines whatever is in flight).
func waitBound(batch []*Lease, sent time.Time, stream bool) time.Time {
	var bound time.Time
	for i, l := range batch {
		own := minTime(l.deadline, sent.Add(l.TTL/3))
		switch {
		case i == 0:
			bound = own
		case stream && own.After(bound):
			bound = own
		case !stream && own.Before(bound):
			bound = own
		}
	}
	return bound
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (w *Watchdog) kickLoop() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// leaseHeap orders leases by a time (their deadline or due time, as which
// says), kept in the entry as monotonic nanoseconds: the comparisons a heap
// operation makes read the heap's own array, not each lease. A lease knows
// its place in each heap (pos).
type leaseHeap struct {
	e     []heapEntry
	which int // byDeadline or byDue: the index into Lease.pos
}

const (
	byDeadline = iota
	byDue
)

type heapEntry struct {
	at int64 // monoNs of the lease's time
	l  *Lease
}

// epoch is the origin of monoNs: a reading of the monotonic clock.
var epoch = time.Now()

// monoNs is t in nanoseconds since epoch, by the monotonic clock (t comes
// from time.Now, plus durations).
func monoNs(t time.Time) int64 { return int64(t.Sub(epoch)) }

func (h *leaseHeap) len() int { return len(h.e) }

// set files l at t: it is added, or moved if it is there.
func (h *leaseHeap) set(l *Lease, t time.Time) {
	at := monoNs(t)
	if i := l.pos[h.which]; i >= 0 {
		h.e[i].at = at
		h.fix(i)
		return
	}
	l.pos[h.which] = len(h.e)
	h.e = append(h.e, heapEntry{at: at, l: l})
	h.up(len(h.e) - 1)
}

// drop takes l out, if it is there.
func (h *leaseHeap) drop(l *Lease) {
	i := l.pos[h.which]
	if i < 0 {
		return
	}
	n := len(h.e) - 1
	if i != n {
		h.swap(i, n)
	}
	h.e[n] = heapEntry{}
	h.e = h.e[:n]
	if i != n {
		h.fix(i)
	}
	l.pos[h.which] = -1
}

func (h *leaseHeap) less(i, j int) bool { return h.e[i].at < h.e[j].at }

func (h *leaseHeap) swap(i, j int) {
	h.e[i], h.e[j] = h.e[j], h.e[i]
	h.e[i].l.pos[h.which], h.e[j].l.pos[h.which] = i, j
}

// fix restores the order after entry i's time changed.
func (h *leaseHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *leaseHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down sifts entry i down; it reports whether it moved.
func (h *leaseHeap) down(i int) bool {
	start := i
	for {
		c := 2*i + 1
		if c >= len(h.e) {
			break
		}
		if r := c + 1; r < len(h.e) && h.less(r, c) {
			c = r
		}
		if !h.less(c, i) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}

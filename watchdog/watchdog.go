package watchdog

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Renewer extends a batch of leases in as few round trips as it can. It
// returns, for each lease, whether the hold is still owned; a non-nil error
// means the outcome of the whole batch is unknown (retried until the deadline).
type Renewer interface {
	Renew(ctx context.Context, leases []*Lease) (alive []bool, err error)
}

// Lease is one hold under the engine's care. Set the exported fields before
// Add and do not change them afterwards.
type Lease struct {
	TTL     time.Duration
	Renewer Renewer // nil for a Fixed lease
	Fixed   bool    // never renewed; only its deadline is watched
	Target  any     // what the Renewer needs (key, owner, token)
	// OnLost is called once, from the engine's goroutine, when the hold is
	// lost (err is the cause). It must not block.
	OnLost func(err error)

	// Owned by the engine, guarded by Watchdog.mu.
	confirmed time.Time
	due       time.Time
	deadline  time.Time
	inflight  bool
	active    bool
}

// Drift is the safety margin subtracted from a lease: 1% of it plus 2 ms.
func Drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// Watchdog renews leases in batches; see the package doc.
type Watchdog struct {
	lostErr error // reported to every lease on Close

	mu     sync.Mutex
	leases map[*Lease]struct{}
	wakeAt time.Time // when the loop will next wake (zero: not scheduled)
	closed bool

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
		leases:  make(map[*Lease]struct{}),
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
	w.leases[l] = struct{}{}
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
	l.active = false
	delete(w.leases, l)
	return true
}

// Len reports how many leases are registered.
func (w *Watchdog) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.leases)
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
	next := l.due
	if l.Fixed {
		next = l.deadline
	}
	if w.wakeAt.IsZero() || next.Before(w.wakeAt) {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

func (w *Watchdog) takeAllLocked() []*Lease {
	lost := make([]*Lease, 0, len(w.leases))
	for l := range w.leases {
		l.active = false
		lost = append(lost, l)
	}
	clear(w.leases)
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

// tick reports lost leases, starts due renewals, and returns when to wake next.
func (w *Watchdog) tick(now time.Time) time.Time {
	var lost []*Lease
	batches := map[Renewer][]*Lease{}
	var next time.Time
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}

	w.mu.Lock()
	for l := range w.leases {
		if !now.Before(l.deadline) {
			l.active = false
			delete(w.leases, l)
			lost = append(lost, l)
			continue
		}
		earliest(l.deadline)
		if l.Fixed || l.inflight {
			continue
		}
		// Batch every lease due within half a renewal interval.
		if !now.Add(l.TTL / 6).Before(l.due) {
			l.inflight = true
			batches[l.Renewer] = append(batches[l.Renewer], l)
			continue
		}
		earliest(l.due)
	}
	w.wakeAt = next
	w.mu.Unlock()

	for _, l := range lost {
		l.OnLost(ErrLost)
	}
	for r, batch := range batches {
		w.wg.Add(1)
		go w.renew(r, batch, now)
	}
	return next
}

// ErrLost is passed to OnLost when a hold is gone or its deadline passed.
var ErrLost = errors.New("watchdog: lease lost")

func (w *Watchdog) renew(r Renewer, batch []*Lease, sent time.Time) {
	defer w.wg.Done()
	// Wait no longer than the earliest deadline in the batch: past it the
	// lease is lost whatever the reply says.
	deadline := batch[0].deadline
	for _, l := range batch[1:] {
		if l.deadline.Before(deadline) {
			deadline = l.deadline
		}
	}
	ctx, cancel := context.WithDeadline(w.ctx, deadline)
	alive, err := r.Renew(ctx, batch)
	cancel()

	var lost []*Lease
	now := time.Now()
	w.mu.Lock()
	for i, l := range batch {
		l.inflight = false
		if !l.active {
			continue // removed or lost while the renewal was in flight
		}
		switch {
		case err != nil:
			retry := min(l.TTL/10, time.Second)
			l.due = now.Add(retry)
		case alive[i]:
			w.confirmLocked(l, sent)
		default:
			l.active = false
			delete(w.leases, l)
			lost = append(lost, l)
		}
	}
	w.mu.Unlock()
	if err != nil {
		w.kickLoop()
	}
	for _, l := range lost {
		l.OnLost(ErrLost)
	}
}

func (w *Watchdog) kickLoop() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

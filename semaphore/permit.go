package semaphore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/scripts"
	"github.com/redisync/redisync/watchdog"
)

// Permit is one acquisition of n permits: leased, renewed by the watchdog
// (unless WithLease), and released once. Its methods are safe for
// concurrent use.
type Permit struct {
	s     *Semaphore
	id    string
	n     int
	token uint64 // set once, when granted

	// op serializes Release calls, so a retried Release sees the outcome of
	// the one before.
	op sync.Mutex

	mu      sync.Mutex
	since   time.Time // when it was granted (the acquire was sent)
	state   permitState
	renewal *watchdog.Lease
	done    chan struct{}
	err     error // nil while held; why it ended otherwise
}

type permitState int

const (
	held     permitState = iota
	lost                 // lease lost: Release cleans up and reports it
	pending              // a Release was sent and its reply lost
	released             // over: another Release is ErrNotHeld
)

func (s *Semaphore) newPermit(n int) *Permit {
	return &Permit{s: s, id: s.e.NewOwner(), n: n}
}

// ID returns the permit's id, as listed by Holders.
func (p *Permit) ID() string { return p.id }

// Count returns how many permits this Permit holds.
func (p *Permit) Count() int { return p.n }

// Token returns the permit's fencing token: strictly greater than the token
// of every earlier acquisition of the same semaphore.
func (p *Permit) Token() uint64 { return p.token }

// Done returns a channel that is closed when the permits are released or lost.
func (p *Permit) Done() <-chan struct{} { return p.done }

// Err returns nil while the permits are held, an error matching
// redisync.ErrLockLost after a loss (lease ran out, permits taken back, or
// the Client closed), and redisync.ErrNotHeld after Release.
func (p *Permit) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Release gives the permits back and wakes the first waiter. A second
// Release returns redisync.ErrNotHeld and changes nothing. After a loss it
// removes whatever is left and returns an error matching
// redisync.ErrLockLost. If it returns another error, the release may or may
// not have happened: renewal has stopped, so the permits come back within
// their lease anyway, and calling Release again is safe.
// Release panics on a nil ctx.
func (p *Permit) Release(ctx context.Context) error {
	if ctx == nil {
		panic("semaphore: nil Context")
	}
	e := p.s.e
	if e.IsClosed() {
		return redisync.ErrClosed
	}
	p.op.Lock()
	defer p.op.Unlock()
	p.mu.Lock()
	state, renewal, lostErr := p.state, p.renewal, p.err
	p.mu.Unlock()

	switch state {
	case released:
		return redisync.ErrNotHeld
	case pending:
		if _, err := p.release(ctx); err != nil {
			return err
		}
		p.setState(released)
		return nil // whatever the reply, the earlier call or this one released it
	case lost:
		if _, err := p.release(ctx); err != nil {
			return err
		}
		p.setState(released)
		return lostErr
	}
	if !e.Watchdog.Remove(renewal) {
		// Lost while we were getting here (OnLost may not have run yet).
		p.end(hold.LostReason(e), lost)
		if _, err := p.release(ctx); err != nil {
			return err
		}
		p.setState(released)
		return p.Err()
	}
	r, err := p.release(ctx)
	if err != nil {
		p.end(redisync.ErrNotHeld, pending)
		return err
	}
	if r != scripts.SemReleased {
		p.end(redisync.ErrLockLost, released)
		return redisync.ErrLockLost
	}
	p.end(redisync.ErrNotHeld, released)
	return nil
}

// attempt is one acquisition round trip, in the shape of engine.Attempt.
// Like a lock's, it is never abandoned in flight: its reply decides what to
// undo, and a grant nobody wants any more is released by its id.
func (p *Permit) attempt(ctx context.Context, waitMs string) (bool, time.Duration, error) {
	s, e := p.s, p.s.e
	if e.IsClosed() {
		return false, 0, redisync.ErrClosed
	}
	actx := ctx
	if ctx.Done() != nil {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(context.WithoutCancel(ctx), engine.CompensateTimeout)
		defer cancel()
	}
	sent := time.Now()
	res, err := scripts.SemAcquire(actx, e.RC, &s.keys, s.capacity, p.n, p.id, s.leaseMs, waitMs, e.Publish)
	if err != nil {
		if !scripts.IsReply(err) {
			p.compensate(ctx)
		}
		switch {
		case errors.Is(err, scripts.ErrTooMany):
			return false, 0, errors.Join(ErrTooMany, errors.Unwrap(err))
		case ctx.Err() != nil:
			return false, 0, ctx.Err()
		}
		return false, 0, err
	}
	if !res.OK {
		if ctx.Err() != nil {
			return false, 0, ctx.Err()
		}
		return false, time.Duration(res.PTTL) * time.Millisecond, nil
	}
	if ctx.Err() != nil {
		p.compensate(ctx)
		return false, 0, ctx.Err()
	}
	l := &watchdog.Lease{
		TTL:   s.lease,
		Fixed: s.fixed,
		Target: &engine.RenewTarget{
			Item:    scripts.RenewItem{Key: s.keys.Holders, Owner: p.id, Token: res.Token, Prefix: s.keys.Permits},
			LeaseMs: s.leaseMs,
		},
	}
	if !s.fixed {
		l.Renewer = e.SemRenewer
	}
	l.OnLost = func(err error) {
		if !errors.Is(err, watchdog.ErrLost) {
			p.end(err, lost) // the Client was closed: matches ErrLockLost and ErrClosed
			return
		}
		p.end(redisync.ErrLockLost, lost)
	}
	p.mu.Lock()
	p.token, p.renewal, p.state, p.done, p.since = res.Token, l, held, make(chan struct{}), sent
	p.mu.Unlock()
	if err := e.Watchdog.Add(l, sent); err != nil {
		p.compensate(ctx)
		return false, 0, redisync.ErrClosed
	}
	return true, 0, nil
}

// compensate releases a grant whose reply was lost or is no longer wanted.
func (p *Permit) compensate(ctx context.Context) {
	bctx, cancel := engine.Background(ctx)
	defer cancel()
	_, _ = p.release(bctx)
}

func (p *Permit) release(ctx context.Context) (int64, error) {
	return scripts.SemRelease(ctx, p.s.e.RC, &p.s.keys, p.id, p.s.e.Publish)
}

// end closes the permit (once) with reason, leaving it in state next.
func (p *Permit) end(reason error, next permitState) {
	p.mu.Lock()
	if p.state != held {
		p.mu.Unlock()
		return
	}
	p.state, p.err = next, reason
	close(p.done)
	held := time.Since(p.since)
	p.mu.Unlock()
	p.s.e.Observe(hold.Ended(p.s.observed(), held, reason))
}

func (p *Permit) setState(st permitState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state = st
}

package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// detached is the context of Detach and Settle: it carries the caller's
// values but not its end, and ends when its work is done (stop),
// CompensateTimeout after the caller's ctx ends (linger), or with cause
// ErrGivenUp when Close gives up the Client's tasks (the engine keeps every
// live detached in a list for that, rather than a context.AfterFunc on
// abandon each).
//
// It is its own context.Context, and those of a Settler and of
// DetachUnwatched can be reused (detachedPool): an acquire or release with
// a cancellable ctx, the common case, then costs no context, channel or
// timer of its own. One goes back to the pool only when nothing can see it
// any more: its work and its watcher are done with it (refs), it never
// ended, no timer or AfterFunc was set on it, and no context derived from
// it is left registered with it — and only for work that keeps no
// reference to it once it returns (a context derived with WithoutCancel
// registers nothing: such work must ask for no reuse).
type detached struct {
	e      *Engine
	parent context.Context // the caller's ctx: its values only

	mu     sync.Mutex
	done   chan struct{} // made at the first Done, and kept while it is reused
	err    error         // context.Canceled once it ended
	cause  error
	timer  *time.Timer
	ended  bool         // its work is done (stop)
	watch  func() bool  // stops the context.AfterFunc on the caller's ctx, if any
	afters []*afterFunc // functions to run when it ends (contexts derived from it)
	refs   atomic.Int32 // holders (see release); 0: back to the pool if pooled
	pooled bool         // it goes back to the pool once unused

	prev, next *detached // in e.detached, under e.abandonMu
}

// afterFunc is one function registered with detached.AfterFunc.
type afterFunc struct{ f func() }

var detachedPool = sync.Pool{New: func() any { return new(detached) }}

// closedChan is the Done of a detached that ended before anyone asked.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// detach returns ctx's detached context, held once (by its work: stop
// releases it). With watch, the caller's ctx's end starts the linger by
// itself; without, the caller calls linger when it sees ctx end (Settle
// does: it waits on ctx anyway). A pooled one is reused once released.
func (e *Engine) detach(ctx context.Context, watch, pooled bool) *detached {
	var d *detached
	if pooled {
		d = detachedPool.Get().(*detached)
	} else {
		d = new(detached)
	}
	d.mu.Lock()
	d.e, d.parent, d.pooled = e, ctx, pooled
	d.mu.Unlock()
	d.refs.Store(1)
	e.abandonMu.Lock()
	if e.givenUp {
		d.cancel(ErrGivenUp)
	} else {
		d.next = e.detached
		if d.next != nil {
			d.next.prev = d
		}
		e.detached = d
	}
	e.abandonMu.Unlock()
	if watch && ctx.Done() != nil {
		d.watch = context.AfterFunc(ctx, d.linger)
	}
	return d
}

// Detached is a context from DetachUnwatched: the caller watches its own
// ctx and calls Linger when it ends (or Watch when it stops watching while
// the work goes on), and Release when it is done with it; the work calls
// Stop when it is done.
type Detached = detached

// DetachUnwatched is Detach for a caller that waits on ctx itself (it
// spares the context.AfterFunc on ctx). It is itself the context for the
// work. With reuse, it is reused once both Stop and Release have been
// called: only for work that is done with its context when Stop is called
// (nothing it started goes on using it, or a context derived from it).
func (e *Engine) DetachUnwatched(ctx context.Context, reuse bool) *Detached {
	d := e.detach(ctx, false, reuse)
	d.refs.Add(1) // the caller's, until Release
	return d
}

// Linger ends d CompensateTimeout from now: the caller's ctx has ended.
func (d *detached) Linger() { d.linger() }

// Stop ends d: the work is done.
func (d *detached) Stop() { d.stop() }

// Release drops the caller's hold on a DetachUnwatched context: it calls
// neither Linger nor Watch afterwards.
func (d *detached) Release() { d.release() }

// Watch makes ctx's end start the linger by itself, for a caller that stops
// watching ctx while the work may go on (nothing when it is done).
func (d *detached) Watch(ctx context.Context) {
	if ctx.Done() == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ended && d.watch == nil {
		d.watch = context.AfterFunc(ctx, d.linger)
	}
}

// linger ends d CompensateTimeout from now (the caller's ctx has ended).
func (d *detached) linger() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ended && d.timer == nil {
		d.timer = time.AfterFunc(CompensateTimeout, d.expire)
	}
}

func (d *detached) expire() { d.cancel(nil) }

// stop ends d (its work is done) and releases the work's hold on it. A
// detached that may still be seen — a timer, a watch or a derived context
// was set on it — is cancelled, as any context is when its work is done.
func (d *detached) stop() {
	d.mu.Lock()
	if d.watch != nil {
		d.watch() // its linger, if running, waits for mu and finds d ended
	}
	d.ended = true
	if d.timer != nil {
		d.timer.Stop()
	}
	seen := d.watch != nil || d.timer != nil || len(d.afters) > 0 || !d.pooled
	if seen {
		d.pooled = false
	}
	d.mu.Unlock()
	if seen {
		d.cancel(nil)
	}
	d.e.abandonMu.Lock()
	d.unlink()
	d.e.abandonMu.Unlock()
	d.release()
}

// release drops one hold on d; the last one puts a clean, pooled d back.
func (d *detached) release() {
	if d.refs.Add(-1) != 0 {
		return
	}
	d.mu.Lock()
	reuse := d.pooled && d.err == nil && d.ended && d.watch == nil && d.timer == nil && len(d.afters) == 0
	d.mu.Unlock()
	if !reuse {
		return
	}
	d.mu.Lock()
	d.e, d.parent, d.ended, d.afters = nil, nil, false, d.afters[:0]
	d.mu.Unlock()
	detachedPool.Put(d)
}

// cancel ends d with cause (context.Canceled when nil), once.
func (d *detached) cancel(cause error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return
	}
	if cause == nil {
		cause = context.Canceled
	}
	d.err, d.cause = context.Canceled, cause
	if d.done == nil {
		d.done = closedChan
	} else {
		close(d.done)
	}
	for _, a := range d.afters {
		go a.f()
	}
	d.afters = nil
}

// Deadline implements context.Context: d has none.
func (d *detached) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done implements context.Context.
func (d *detached) Done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done == nil {
		d.done = make(chan struct{})
	}
	return d.done
}

// Err implements context.Context.
func (d *detached) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// causeKey is the Value key under which a detached context (and those
// derived from it) tells its cause (see Cause): context.Cause cannot see
// the cause of a context of its own type.
type causeKey struct{}

// Value implements context.Context: the caller's values, as
// context.WithoutCancel's, while its call lasts. A pooled one serves
// another call once released, so a client that keeps a command's ctx past
// the command's return (rueidis does not; redisync.New's doc asks the same
// of any rueidis.Client given to it) sees nil, or a later call's values.
func (d *detached) Value(key any) any {
	if key == (causeKey{}) {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.cause
	}
	d.mu.Lock()
	parent := d.parent
	d.mu.Unlock()
	if parent == nil {
		return nil // released: its call is over (see Value's doc)
	}
	return context.WithoutCancel(parent).Value(key)
}

// AfterFunc lets contexts derived from d (context.WithCancel and the like)
// follow its end without a goroutine each, as they follow the standard
// contexts'.
func (d *detached) AfterFunc(f func()) func() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	d.afters = append(d.afters, a)
	return func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for i, b := range d.afters {
			if b == a {
				d.afters = append(d.afters[:i], d.afters[i+1:]...)
				return true
			}
		}
		return false
	}
}

// unlink takes d out of its engine's list (under abandonMu).
func (d *detached) unlink() {
	switch {
	case d.prev != nil:
		d.prev.next = d.next
	case d.e.detached == d:
		d.e.detached = d.next
	default:
		return // not listed
	}
	if d.next != nil {
		d.next.prev = d.prev
	}
	d.prev, d.next = nil, nil
}

// giveUpDetached ends every live detached context with ErrGivenUp (under
// abandonMu, as Close gives up its tasks).
func (e *Engine) giveUpDetached() {
	for d := e.detached; d != nil; {
		next := d.next
		d.cancel(ErrGivenUp)
		d.prev, d.next = nil, nil
		d = next
	}
	e.detached = nil
}

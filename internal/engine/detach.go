package engine

import (
	"context"
	"sync"
	"time"
)

// detached is the context of Detach and Settle, in one allocation beside
// the context's own: it ends when its work is done (stop), CompensateTimeout
// after the caller's ctx ends (linger), or with cause ErrGivenUp when Close
// gives up the Client's tasks (the engine keeps every live detached in a
// list for that, rather than a context.AfterFunc on abandon each).
type detached struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	e      *Engine

	mu    sync.Mutex
	timer *time.Timer
	ended bool
	watch func() bool // stops the context.AfterFunc on the caller's ctx, if any

	prev, next *detached // in e.detached, under e.abandonMu
}

// detach returns ctx's detached context. With watch, the caller's ctx's end
// starts the linger by itself; without, the caller calls linger when it
// sees ctx end (Settle does: it waits on ctx anyway).
func (e *Engine) detach(ctx context.Context, watch bool) *detached {
	d := &detached{e: e}
	d.ctx, d.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
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
// the work goes on), and Stop when the work is done.
type Detached = detached

// DetachUnwatched is Detach for a caller that waits on ctx itself (it
// spares the context.AfterFunc on ctx): Ctx is the context for the work.
func (e *Engine) DetachUnwatched(ctx context.Context) *Detached { return e.detach(ctx, false) }

// Ctx is the context for the detached work.
func (d *detached) Ctx() context.Context { return d.ctx }

// Linger ends d CompensateTimeout from now: the caller's ctx has ended.
func (d *detached) Linger() { d.linger() }

// Stop ends d: the work is done.
func (d *detached) Stop() { d.stop() }

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
		d.timer = time.AfterFunc(CompensateTimeout, func() { d.cancel(nil) })
	}
}

// stop ends d: its work is done.
func (d *detached) stop() {
	d.mu.Lock()
	if d.watch != nil {
		d.watch() // its linger, if running, waits for mu and finds d ended
	}
	d.ended = true
	if d.timer != nil {
		d.timer.Stop()
	}
	d.mu.Unlock()
	d.cancel(nil)
	d.e.abandonMu.Lock()
	d.unlink()
	d.e.abandonMu.Unlock()
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

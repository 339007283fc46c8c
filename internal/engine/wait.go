package engine

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/obs"
)

// Attempt makes one acquisition attempt. It reports whether it acquired and,
// when busy, a hint of how long the current holder may keep it (0: unknown).
type Attempt func(ctx context.Context) (acquired bool, hint time.Duration, err error)

// Acquire runs the waiting loop shared by every primitive:
//
//  1. try once; done if acquired or on error;
//  2. join the channel's subscription, and wait until it is confirmed (or one
//     poll bound passes), so that no release after this point can be missed;
//  3. try again; then wait for a wake-up, or for min(hint, MaxPoll), or for
//     ctx — and repeat.
//
// It returns ctx.Err() (unwrapped) when ctx ends, and ErrClosed when the
// Client is closed. Wake-ups are only hints: the bounded poll is what makes
// progress certain when messages are lost.
//
// A grant is reported to the Observer as an Acquired event about target.
func (e *Engine) Acquire(ctx context.Context, channel string, target obs.Target, try Attempt) error {
	start := time.Now()
	granted := func(sent time.Time, waited bool) {
		e.Observe(obs.Event{Kind: obs.Acquired, Primitive: target.Primitive, Name: target.Name,
			Wait: time.Since(start), Latency: time.Since(sent), Waited: waited})
	}
	ok, hint, err := try(ctx)
	if ok {
		granted(start, false)
	}
	if err != nil || ok {
		return err
	}
	w := e.Hub.Join(ctx, channel)
	unused := false
	defer func() { w.Leave(unused) }()

	timer := time.NewTimer(e.pollBound(hint))
	defer timer.Stop()
	select {
	case <-w.Ready():
	case <-timer.C:
	case <-ctx.Done():
		return ctx.Err()
	case <-e.closed:
		return errs.ErrClosed
	}
	for {
		sent := time.Now()
		ok, hint, err = try(ctx)
		if ok {
			granted(sent, true)
		}
		if err != nil || ok {
			if err != nil && ctx.Err() == nil {
				unused = true // a failed attempt should not swallow a wake-up
			}
			return err
		}
		unused = false
		timer.Reset(e.pollBound(hint))
		select {
		case <-w.C():
			unused = true
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-e.closed:
			return errs.ErrClosed
		}
		// Since Go 1.23 (go.mod says 1.25) Reset discards a stale fire, so
		// the timer needs no draining here.
	}
}

// pollBound is how long to wait before the next attempt without a wake-up.
func (e *Engine) pollBound(hint time.Duration) time.Duration {
	d := e.Config.MaxPoll
	if hint > 0 && hint < d {
		d = hint
	}
	return max(d, time.Millisecond)
}

// TryOnce makes one attempt (TryLock) and reports a grant as Acquire does.
func (e *Engine) TryOnce(ctx context.Context, target obs.Target, try Attempt) (bool, error) {
	sent := time.Now()
	ok, _, err := try(ctx)
	if ok {
		e.Observe(obs.Event{Kind: obs.Acquired, Primitive: target.Primitive, Name: target.Name,
			Wait: time.Since(sent), Latency: time.Since(sent)})
	}
	return ok, err
}

package ratelimit

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/scripts"
)

// Wait blocks until n events for key are admitted, or ctx ends. It makes
// one reservation — one script call that moves key's schedule by n events
// whatever the delay, so concurrent waiters, in any process, are admitted
// in the order their reservations reached Redis — and then sleeps exactly
// the delay the server computed (one timer, no polling), from the moment
// the reply arrives: never before the admission time, late by the reply's
// trip. n must be in 1..burst (an *ArgError, ErrInvalidN, before any I/O).
//
// When the admission would come after ctx's deadline, or further out than
// WithMaxWait, Wait reserves nothing and returns a *DelayError
// (ErrWaitTooLong; with the deadline as the bound it matches
// context.DeadlineExceeded too) at once, as golang.org/x/time/rate's Wait
// does.
//
// When ctx ends first, Wait returns ctx.Err() (unwrapped) within
// redisync.UndoWait of its end, and gives its reservation back as
// rate_give_back.lua says: all of it when no later reservation was made,
// else what the later ones leave of a burst, and none once they fill one
// (their admission times cannot move, so the capacity is given back only
// where it cannot admit anything earlier than GCRA would). A reservation
// whose reply did not come back within that bound is not given back: its
// events stay counted, which admits fewer, never more. So does a give-back
// the server refuses or does not answer before the reservation's
// admission time.
func (l *Limiter) Wait(ctx context.Context, key string, n int) error {
	if err := l.check(ctx, key, n, true); err != nil {
		return err
	}
	longest, byDeadline := int64(-1), false
	if dl, ok := ctx.Deadline(); ok {
		longest, byDeadline = max(time.Until(dl).Microseconds(), 0), true
	}
	if l.maxWait > 0 && (longest < 0 || l.maxWait.Microseconds() < longest) {
		longest, byDeadline = l.maxWait.Microseconds(), false
	}
	k := keys.Rate(l.name, key)
	// The reply of a reservation sent before ctx ended is waited for up to
	// UndoWait after, so that it can be given back.
	lctx, cancel := engine.Linger(ctx, engine.UndoWait)
	defer cancel()
	if dl, ok := ctx.Deadline(); ok {
		// The same bound as a deadline too: rueidis gives up a connection
		// still being dialled by a deadline, not by a cancellation.
		var dcancel context.CancelFunc
		lctx, dcancel = context.WithDeadline(lctx, dl.Add(engine.UndoWait))
		defer dcancel()
	}
	d, err := scripts.RateDecide(lctx, l.e.RC, k, &l.limit, int64(n), scripts.RateReserve, longest)
	if d.Admitted > 0 && l.reserved != nil {
		l.reserved(key, d)
	}
	if err != nil {
		if d.Admitted > 0 { // unconfirmed by the replicas: undone
			l.giveBack(ctx, lctx.Done(), k, n, d)
		}
		return l.wrap(ctx, "reserving", key, err)
	}
	if d.Admitted == 0 {
		return &DelayError{Limiter: l.name, Key: key, N: n, Delay: usDuration(d.RetryUs),
			Longest: usDuration(longest), deadline: byDeadline}
	}
	if cerr := ctx.Err(); cerr != nil {
		l.giveBack(ctx, lctx.Done(), k, n, d)
		return cerr
	}
	if d.RetryUs <= 0 {
		return nil
	}
	timer := time.NewTimer(usDuration(d.RetryUs))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		l.giveBack(ctx, lctx.Done(), k, n, d)
		return ctx.Err()
	case <-l.e.Closed():
		bctx, bcancel := context.WithTimeout(context.WithoutCancel(ctx), engine.UndoWait)
		defer bcancel()
		l.giveBack(ctx, bctx.Done(), k, n, d)
		return errs.ErrClosed
	}
}

// giveBack sends reservation d's give-back as a Client task, resent while
// it can still give something (until the reservation's admission time),
// and waits for it until bound.
func (l *Limiter) giveBack(ctx context.Context, bound <-chan struct{}, k string, n int, d scripts.RateDecision) {
	until := time.Now().Add(usDuration(d.RetryUs))
	done := make(chan struct{})
	l.e.Go(func() {
		defer close(done)
		l.e.Persist(ctx, until, false, func(uctx context.Context) bool {
			_, err := scripts.RateGiveBack(uctx, l.e.RC, k, &l.limit, int64(n), d)
			return !engine.Resend(err)
		})
	})
	select {
	case <-done:
	case <-bound:
	}
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/obs"
)

// Attempt makes one acquisition attempt. It reports whether it acquired and,
// when busy, a hint of how long the current holder may keep it (0: unknown;
// see Hint for how a script's reply becomes one).
type Attempt func(ctx context.Context) (acquired bool, hint time.Duration, err error)

// Acquire runs the wait loop (see Wait) for an acquisition: the
// Preflight first, a grant reported to the Observer as an Acquired event
// about target, and a failure named after the primitive. It returns
// ctx.Err() (unwrapped) when ctx ends, ErrClosed when the Client is closed,
// a primitive's own refusal as is, and a Redis or transport error or a
// WrongKindError wrapped on one line with the primitive, the name and what
// was being done (`rlock "name": waiting for the lock: EOF`, see Wrap).
func (e *Engine) Acquire(ctx context.Context, channel string, target obs.Target, try Attempt) error {
	start := time.Now()
	if err := e.preflight(ctx, target, doingAcquire); err != nil {
		return err
	}
	waited, sent, err := e.Wait(ctx, Wait{Channel: channel}, try)
	switch {
	case err == nil:
		if !waited {
			sent = start // the first attempt's latency counts the preflight too
		}
		e.Observe(obs.Event{Kind: obs.Acquired, Primitive: target.Primitive, Name: target.Name,
			Wait: time.Since(start), Latency: time.Since(sent), Waited: waited})
		return nil
	case waited:
		return e.failed(ctx, target, doingWait, err)
	}
	return e.failed(ctx, target, doingAcquire, err)
}

// Wait is what one wait listens to: the channel whose messages say "try
// again", whether a message is for every local waiter (a latch's) or for
// one (a lock's release), and the poll bound.
type Wait struct {
	Channel string
	All     bool          // join with Hub.JoinAll: every message wakes every waiter
	Poll    time.Duration // the longest sleep without a message; 0: the Client's MaxPoll
}

// Wait runs the waiting loop shared by every primitive and the latch:
//
//  1. try once; done if it succeeded or on an error that is not transient;
//  2. join the channel's subscription, and wait until it is confirmed (or one
//     poll bound passes), so that no message after this point can be missed;
//  3. try again; then wait for a wake-up, or for min(hint, poll bound), or
//     for ctx — and repeat.
//
// A transient transport error (see Transient: a dropped connection, a server
// restarting or loading) does not end the wait: the attempt is repeated
// after a jittered backoff (never slower than the poll bound), within ctx.
// Wake-ups are only hints: the bounded poll is what makes progress certain
// when messages are lost.
//
// It returns nil when an attempt succeeded, ctx.Err() (unwrapped) when ctx
// ends, ErrClosed when the Client is closed, and otherwise the error of the
// attempt that ended the wait, as the attempt returned it; waited reports
// whether an attempt found the name busy (another holder went first: a
// transient error retried is no wait for a holder), and sent when the
// last attempt was sent.
func (e *Engine) Wait(ctx context.Context, wait Wait, try Attempt) (waited bool, sent time.Time, err error) {
	poll := wait.Poll
	if poll <= 0 {
		poll = e.Config.MaxPoll
	}
	sent = time.Now()
	ok, hint, err := try(ctx)
	if ok {
		return false, sent, nil
	}
	if err != nil && !e.retryable(ctx, err) {
		return false, sent, err
	}
	waited = err == nil
	join := e.Hub.Join
	if wait.All {
		join = e.Hub.JoinAll
	}
	w := join(ctx, wait.Channel)
	unused := false // a wake-up taken and not acted on goes to another waiter
	defer func() { w.Leave(unused && !wait.All) }()

	backoff := Backoff{Min: minBackoff, Max: min(maxBackoff, max(poll, minBackoff))}
	first := pollBound(poll, hint)
	if err != nil {
		first = backoff.Next()
	}
	timer := time.NewTimer(first)
	defer timer.Stop()
	select {
	case <-w.Ready():
	case <-timer.C:
	case <-ctx.Done():
		return waited, sent, ctx.Err()
	case <-e.closed:
		return waited, sent, errs.ErrClosed
	}
	for {
		sent = time.Now()
		ok, hint, err = try(ctx)
		if ok {
			return waited, sent, nil
		}
		if err != nil {
			if !e.retryable(ctx, err) {
				if ctx.Err() == nil {
					unused = true // a failed attempt should not swallow a wake-up
				}
				return waited, sent, err
			}
			// Transient: try again after a backoff; wake-ups stay queued.
			timer.Reset(backoff.Next())
			select {
			case <-timer.C:
			case <-ctx.Done():
				return waited, sent, ctx.Err()
			case <-e.closed:
				return waited, sent, errs.ErrClosed
			}
			continue
		}
		waited = true
		backoff.Reset()
		unused = false
		timer.Reset(pollBound(poll, hint))
		select {
		case <-w.C():
			unused = true
		case <-timer.C:
		case <-ctx.Done():
			return waited, sent, ctx.Err()
		case <-e.closed:
			return waited, sent, errs.ErrClosed
		}
		// Since Go 1.23 (go.mod says 1.25) Reset discards a stale fire, so
		// the timer needs no draining here.
	}
}

// retryable reports whether an attempt that failed with err should be
// repeated: the caller still waits, and err is transient.
func (e *Engine) retryable(ctx context.Context, err error) bool {
	return ctx.Err() == nil && !e.IsClosed() && Transient(err)
}

// What an acquisition was doing when it failed, for Wrap: the first
// attempt of Acquire, a later one (after the caller started waiting), or
// TryOnce's only one.
const (
	doingAcquire = "acquiring"
	doingWait    = "waiting for"
	doingTry     = "trying to take"
)

// failed is what Acquire and TryOnce return for err: ctx.Err() when ctx
// ended, ErrClosed after Close, a Redis or transport error or a
// WrongKindError wrapped by Wrap, anything else (a primitive's own
// refusal) as is.
func (e *Engine) failed(ctx context.Context, target obs.Target, doing string, err error) error {
	if cerr := ctx.Err(); cerr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return cerr
	}
	prim, what := describe(target.Primitive)
	return wrap(prim, target.Name, doing+" "+what, err)
}

// preflight runs the Preflight, if any, and names the acquisition in its
// refusal: `rlock "name": acquiring the lock: <refusal>`.
func (e *Engine) preflight(ctx context.Context, target obs.Target, doing string) error {
	if e.Preflight == nil {
		return nil
	}
	err := e.Preflight(ctx, target)
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return ctxErr // the caller's own end, unwrapped
	}
	prim, what := describe(target.Primitive)
	return fmt.Errorf("%s %q: %s %s: %w", prim, target.Name, doing, what, err)
}

// describe splits a target's Primitive into the package a user knows and
// the thing it was after: "rwlock.read" is the read lock of an rwlock, a
// semaphore hands out permits, everything else is a lock.
func describe(primitive string) (prim, what string) {
	switch primitive {
	case "rwlock.read":
		return "rwlock", "the read lock"
	case "rwlock.write":
		return "rwlock", "the write lock"
	case "semaphore":
		return "semaphore", "permits"
	}
	return primitive, "the lock"
}

// WrapIO wraps err, when it is a Redis error reply, a transport failure, a
// WrongKindError or a write the replicas did not acknowledge
// (ErrNotReplicated), with the primitive, the lock's name and the operation,
// on one line: op is "<primitive>: <verb>" (as hold passes it, e.g.
// "rlock: release"), and the message reads `rlock "name": releasing the
// lock: EOF`. Other errors (sentinels, a primitive's refusals, ctx errors)
// are returned as they are. errors.Is and errors.As see through the
// wrapping.
func WrapIO(op, name string, err error) error {
	p, verb, _ := strings.Cut(op, ": ")
	prim, what := describe(p)
	doing := verb
	switch verb {
	case "release":
		doing = "releasing " + what
	case "acquire":
		doing = doingAcquire + " " + what
	}
	return wrap(prim, name, doing, err)
}

// wrap is WrapIO's and failed's rule: only errors that do not already say
// which lock they are about get the prefix.
func wrap(prim, name, doing string, err error) error {
	if err == nil {
		return nil
	}
	_, reply := rueidis.IsRedisErr(err)
	if !reply && !Transient(err) && !errors.Is(err, rueidis.ErrClosing) && !errors.Is(err, errs.ErrWrongKind) &&
		!errors.Is(err, errs.ErrNotReplicated) && err != ErrGivenUp {
		return err
	}
	if strings.Contains(err.Error(), "\n") {
		err = oneLine{err} // keep the chain, fold the lines
	}
	return fmt.Errorf("%s %q: %s: %w", prim, name, doing, err)
}

// oneLine shows a multi-line error on one line and unwraps to it.
type oneLine struct{ err error }

func (o oneLine) Error() string { return errs.OneLine(o.err.Error()) }
func (o oneLine) Unwrap() error { return o.err }

// Backoff bounds for transient errors while waiting.
const (
	minBackoff = 20 * time.Millisecond
	maxBackoff = time.Second
)

// Transient reports whether err is in errs.Classify's Transient class: a
// failure to talk to Redis that may pass by itself (a dropped or refused
// connection, a timeout on the wire, a server loading, a failover or a
// slot migration in progress). A closed client, a context's end and
// Redis's answers to the command itself are not.
func Transient(err error) bool { return errs.Classify(err) == errs.Transient }

// Hint is the wait hint of a busy reply that says the holder may keep the
// lock another ms milliseconds (a PTTL, or a script's estimate): ms+1 ms,
// since Redis rounds a remaining lease down to the millisecond and the next
// attempt should find it run out, not a fraction of a millisecond short. A
// lease that runs out now (0) is a 1 ms hint — retry at once —, never
// "unknown": a waiter that took it for unknown would sleep a whole MaxPoll
// past the expiry. A negative ms (-1: the key has no expiry; -2: it is
// gone; a script's "none") is no hint (0).
func Hint(ms int64) time.Duration {
	if ms < 0 {
		return 0
	}
	return time.Duration(ms+1) * time.Millisecond
}

// pollBound is how long to wait before the next attempt without a wake-up:
// the hint when it is shorter than the poll bound (a lease about to run
// out), else the poll bound.
func pollBound(poll, hint time.Duration) time.Duration {
	d := poll
	if hint > 0 && hint < d {
		d = hint
	}
	return max(d, time.Millisecond)
}

// TryOnce makes one attempt (TryLock) and reports a grant as Acquire does.
func (e *Engine) TryOnce(ctx context.Context, target obs.Target, try Attempt) (bool, error) {
	if err := e.preflight(ctx, target, doingTry); err != nil {
		return false, err
	}
	sent := time.Now()
	ok, _, err := try(ctx)
	if ok {
		e.Observe(obs.Event{Kind: obs.Acquired, Primitive: target.Primitive, Name: target.Name,
			Wait: time.Since(sent), Latency: time.Since(sent)})
	}
	if err != nil {
		return false, e.failed(ctx, target, doingTry, err)
	}
	return ok, nil
}

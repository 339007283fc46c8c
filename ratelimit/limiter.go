package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/lockopt"
	"github.com/redisync/redisync/internal/scripts"
)

// MaxNameLength is the longest limiter name accepted, in bytes, as for
// every primitive.
const MaxNameLength = 4096

// MaxKeyLength is the longest identity key accepted, in bytes (as long as
// the longest lock name: it is sent with every decision).
const MaxKeyLength = 4096

// MaxHorizon is the longest burst × interval a limiter takes: how far
// ahead of the server's clock an identity's state may reach (100 years
// keeps every time the scripts compute exact in Lua's numbers).
const MaxHorizon = 100 * 365 * 24 * time.Hour

// Limiter is a rate limiter: each identity key it is asked about (a user,
// a tenant, an IP address) gets rate with bursts of up to burst, shared by
// every process that makes a Limiter of the same name, rate and burst. It
// holds no state of its own: every decision is one script call on the
// server's clock. Safe for concurrent use.
type Limiter struct {
	e     *engine.Engine
	name  string
	rate  Rate
	burst int
	err   error // what every method returns: a name, rate or burst New refused
	limit scripts.RateLimit
	// intervalUs is the emission interval in µs.
	intervalUs int64
	maxWait    time.Duration
	// reserved, when set (export_test.go), is told of each reservation
	// Wait made.
	reserved func(key string, d scripts.RateDecision)
}

// Result is one decision.
type Result struct {
	// Allowed is how many events were admitted: n or 0 for AllowN, 0..n
	// for AllowAtMost.
	Allowed int
	// Remaining is how many more events are admissible at once.
	Remaining int
	// RetryAfter is, when nothing was admitted, how long until the request
	// would be (for AllowAtMost: one event); 0 when something was.
	RetryAfter time.Duration
	// ResetAfter is how long until the identity is idle again: a full
	// burst admissible, and its key gone from Redis.
	ResetAfter time.Duration
}

// New returns a limiter named name admitting rate per identity key, with
// bursts of up to burst events. It does no I/O. It panics on a nil client
// or an invalid option. A name that cannot be used (empty, longer than
// MaxNameLength, one every primitive refuses: see
// redisync.ErrInvalidName) makes every method return
// redisync.ErrInvalidName; a rate or a burst that cannot be used makes
// every method return an *ArgError (ErrInvalidRate, ErrInvalidBurst) —
// both before any I/O. Limiters of one name must agree on rate and burst:
// the key holds only the schedule, which each decision reads with its own.
func New(c *redisync.Client, name string, rate Rate, burst int, opts ...Option) *Limiter {
	e := engine.FromClient(c)
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	l := &Limiter{e: e, name: name, rate: rate, burst: burst, maxWait: o.maxWait}
	switch {
	case name == "":
		l.err = fmt.Errorf("ratelimit: empty limiter name: %w", errs.ErrInvalidName)
		return l
	case len(name) > lockopt.MaxNameLength:
		l.err = fmt.Errorf("ratelimit: limiter name of %d bytes exceeds MaxNameLength (%d): %w", len(name), lockopt.MaxNameLength, errs.ErrInvalidName)
		return l
	case keys.Reserved(name) != "":
		// No key of the limiter's could meet another's (keys.Rate), but a
		// name every primitive refuses is refused here too.
		l.err = fmt.Errorf("ratelimit: name %q %s: %w", name, keys.Reserved(name), errs.ErrInvalidName)
		return l
	}
	us, err := rate.intervalUs()
	if err != nil {
		l.err = &ArgError{Limiter: name, Arg: "rate", Value: rate.String(), Reason: err.Error(), Err: ErrInvalidRate}
		return l
	}
	if burst < 1 {
		l.err = &ArgError{Limiter: name, Arg: "burst", Value: strconv.Itoa(burst), Reason: "below 1", Err: ErrInvalidBurst}
		return l
	}
	if int64(burst) > MaxHorizon.Microseconds()/us {
		l.err = &ArgError{Limiter: name, Arg: "burst", Value: strconv.Itoa(burst),
			Reason: fmt.Sprintf("burst × interval (%v) exceeds MaxHorizon", time.Duration(us)*time.Microsecond), Err: ErrInvalidBurst}
		return l
	}
	l.intervalUs = us
	l.limit = scripts.RateLimit{Interval: strconv.FormatInt(us, 10), Tolerance: strconv.FormatInt(us*int64(burst), 10)}
	return l
}

// Name returns the limiter's name.
func (l *Limiter) Name() string { return l.name }

// Rate returns the rate New was given.
func (l *Limiter) Rate() Rate { return l.rate }

// Burst returns the burst New was given.
func (l *Limiter) Burst() int { return l.burst }

// Allow is AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (Result, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN admits n events for key now, or none: Result.Allowed is n or 0.
// A denial changes nothing in Redis. n must be in 1..burst (an *ArgError,
// ErrInvalidN, before any I/O). Anything else under the key's Redis key is
// a *redisync.WrongKindError, left as it is. With redisync.WithWaitReplicas,
// an admission the replicas did not acknowledge returns the Result of the
// master together with an error matching redisync.ErrNotReplicated.
func (l *Limiter) AllowN(ctx context.Context, key string, n int) (Result, error) {
	if err := l.check(ctx, key, n, true); err != nil {
		return Result{}, err
	}
	d, err := scripts.RateDecide(ctx, l.e.RC, keys.Rate(l.name, key), &l.limit, int64(n), scripts.RateAllOrNothing, -1)
	return result(d), l.wrap(ctx, "deciding", key, err)
}

// AllowAtMost admits as many of n events for key as are admissible now,
// from 0 to n (Result.Allowed); n may exceed the burst (at most a burst is
// admitted). n below 1 is an *ArgError (ErrInvalidN), before any I/O. As
// AllowN otherwise.
func (l *Limiter) AllowAtMost(ctx context.Context, key string, n int) (Result, error) {
	if err := l.check(ctx, key, n, false); err != nil {
		return Result{}, err
	}
	d, err := scripts.RateDecide(ctx, l.e.RC, keys.Rate(l.name, key), &l.limit, int64(n), scripts.RateAtMost, -1)
	return result(d), l.wrap(ctx, "deciding", key, err)
}

// Reset forgets key's history: a full burst is admissible at once. It
// deletes the key's Redis key (only a limiter's state: anything else there
// is a *redisync.WrongKindError, left as it is). A Wait's reservation made
// before the Reset is admitted at its time all the same, and is no longer
// counted against the events after it.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if err := l.check(ctx, key, 1, false); err != nil {
		return err
	}
	_, err := scripts.RateReset(ctx, l.e.RC, keys.Rate(l.name, key))
	return l.wrap(ctx, "resetting", key, err)
}

// check is the guard at the top of every method: nil ctx (a panic), the
// limiter's own error, a closed Client, ctx's end, the key, and n (below
// 1, or above the burst when atMostBurst).
func (l *Limiter) check(ctx context.Context, key string, n int, atMostBurst bool) error {
	if err := lockopt.Check("ratelimit", l.e, l.err, ctx); err != nil {
		return err
	}
	switch {
	case key == "":
		return &ArgError{Limiter: l.name, Arg: "key", Value: `""`, Reason: "empty", Err: ErrInvalidKey}
	case len(key) > MaxKeyLength:
		return &ArgError{Limiter: l.name, Arg: "key", Value: quote(key),
			Reason: fmt.Sprintf("longer than MaxKeyLength (%d)", MaxKeyLength), Err: ErrInvalidKey}
	case n < 1:
		return &ArgError{Limiter: l.name, Arg: "n", Value: strconv.Itoa(n), Reason: "below 1", Err: ErrInvalidN}
	case atMostBurst && n > l.burst:
		return &ArgError{Limiter: l.name, Arg: "n", Value: strconv.Itoa(n),
			Reason: fmt.Sprintf("above the burst (%d): never admissible", l.burst), Err: ErrInvalidN}
	}
	return nil
}

// wrap names the limiter, the operation and the key in a Redis or
// transport error (a WrongKindError included); ctx's own end is returned
// unwrapped.
func (l *Limiter) wrap(ctx context.Context, doing, key string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return cerr
	}
	return engine.WrapIO("ratelimit: "+doing+" for key "+quote(key), l.name, err)
}

func result(d scripts.RateDecision) Result {
	return Result{Allowed: int(d.Admitted), Remaining: int(d.Remaining),
		RetryAfter: usDuration(d.RetryUs), ResetAfter: usDuration(d.ResetUs)}
}

func usDuration(us int64) time.Duration { return time.Duration(max(us, 0)) * time.Microsecond }

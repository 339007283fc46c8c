package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinels of the bad arguments every method refuses before any I/O; the
// error is an *ArgError naming the limiter and the argument.
var (
	// ErrInvalidRate: New's rate has a limit or a period that is not
	// positive, or more than one event per microsecond.
	ErrInvalidRate = errors.New("ratelimit: invalid rate")
	// ErrInvalidBurst: New's burst is below 1, or so large that burst ×
	// interval exceeds MaxHorizon.
	ErrInvalidBurst = errors.New("ratelimit: invalid burst")
	// ErrInvalidN: n is below 1, or (AllowN, Wait) above the burst, which
	// no decision could ever admit.
	ErrInvalidN = errors.New("ratelimit: invalid number of events")
	// ErrInvalidKey: the identity key is empty or longer than MaxKeyLength.
	ErrInvalidKey = errors.New("ratelimit: invalid key")
)

// ArgError is a bad argument, refused before any I/O: it matches one of
// ErrInvalidRate, ErrInvalidBurst, ErrInvalidN and ErrInvalidKey.
type ArgError struct {
	Limiter string // the limiter's name
	Arg     string // "rate", "burst", "n" or "key"
	Value   string // the argument, as given (a long key is cut)
	Reason  string // why it is refused
	Err     error  // the sentinel
}

func (e *ArgError) Error() string {
	return fmt.Sprintf("ratelimit %q: %s %s: %s: %v", e.Limiter, e.Arg, e.Value, e.Reason, e.Err)
}

// Unwrap makes errors.Is(err, e.Err) hold.
func (e *ArgError) Unwrap() error { return e.Err }

// ErrWaitTooLong is returned by Wait when the admission would come after
// its ctx's deadline (or further out than WithMaxWait): it reserved
// nothing and returns at once. The error is a *DelayError.
var ErrWaitTooLong = errors.New("ratelimit: the wait would be too long")

// DelayError says how long a refused Wait would have waited. It matches
// ErrWaitTooLong, and context.DeadlineExceeded too when the ctx's
// deadline was the bound.
type DelayError struct {
	Limiter, Key string
	N            int
	Delay        time.Duration // the wait the admission needed
	Longest      time.Duration // the longest wait accepted
	deadline     bool
}

func (e *DelayError) Error() string {
	bound := "WithMaxWait"
	if e.deadline {
		bound = "the context's deadline"
	}
	return fmt.Sprintf("ratelimit %q: %d events for key %s would wait %v, past %s (%v): %v",
		e.Limiter, e.N, quote(e.Key), e.Delay, bound, e.Longest, ErrWaitTooLong)
}

// Unwrap makes errors.Is(err, ErrWaitTooLong) hold, and
// errors.Is(err, context.DeadlineExceeded) when the deadline was the bound.
func (e *DelayError) Unwrap() []error {
	if e.deadline {
		return []error{ErrWaitTooLong, context.DeadlineExceeded}
	}
	return []error{ErrWaitTooLong}
}

// keyShown is how many bytes of a key a message quotes.
const keyShown = 64

func quote(key string) string {
	if len(key) <= keyShown {
		return fmt.Sprintf("%q", key)
	}
	return fmt.Sprintf("%q... (%d bytes)", key[:keyShown], len(key))
}

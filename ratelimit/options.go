package ratelimit

import (
	"fmt"
	"time"
)

// Option configures a Limiter.
type Option func(*options)

type options struct {
	maxWait time.Duration // 0: none
}

// WithMaxWait bounds how far ahead Wait reserves: an admission further
// out than d is refused at once with a *DelayError (ErrWaitTooLong),
// reserving nothing, as one past the ctx's deadline is. It keeps waiters
// without a deadline from queueing up reservations without end. New panics
// if d is not positive. Default: no bound but the ctx's deadline.
func WithMaxWait(d time.Duration) Option {
	if d <= 0 {
		panic(fmt.Sprintf("ratelimit: WithMaxWait(%v) is not positive", d))
	}
	return func(o *options) { o.maxWait = d }
}

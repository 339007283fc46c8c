package semaphore

import (
	"time"

	"github.com/redisync/redisync/internal/lockopt"
)

// Option configures a Semaphore.
type Option func(*lockopt.Options)

// DefaultWaiterTimeout is how long a waiting Acquire keeps its place in the
// queue without a heartbeat.
const DefaultWaiterTimeout = 5 * time.Second

// WithLease gives every Permit a fixed lease d: no renewal; the permits go
// back to the semaphore d after the acquisition unless released before, and
// the Permit then reports ErrLockLost. Below redisync.MinLease (10 ms), every
// method of the Semaphore returns redisync.ErrInvalidLease without I/O. Default:
// watchdog mode (the Client's watchdog timeout, renewed every third until
// Release).
func WithLease(d time.Duration) Option {
	return func(o *lockopt.Options) { o.SetLease(d) }
}

// WithWaiterTimeout sets how long a waiting Acquire's place in the queue
// survives without a heartbeat (a waiting Acquire heartbeats at least every
// third of it, so only a dead waiter's place lapses). New panics if d is
// below 10 ms; a d below 1 s is raised to 1 s (a busy machine stalls a
// live waiter longer than two thirds of a shorter one). Default:
// DefaultWaiterTimeout (5 s).
func WithWaiterTimeout(d time.Duration) Option {
	return func(o *lockopt.Options) { o.SetWaiterTimeout(d) }
}

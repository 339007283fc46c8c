package rwlock

import (
	"time"

	"github.com/redisync/redisync/internal/lockopt"
)

// Option configures an RWMutex.
type Option func(*lockopt.Options)

// DefaultWaiterTimeout is how long a waiting writer's claim (writer
// preference) survives without a heartbeat.
const DefaultWaiterTimeout = lockopt.DefaultWaiterTimeout

// WithLease gives every hold, read or write, a fixed lease d: no renewal;
// the hold ends d after its last acquisition unless released before, and
// then reports ErrLockLost. New panics if d is below 1 ms. Default: watchdog
// mode (the Client's watchdog timeout, renewed every third).
func WithLease(d time.Duration) Option {
	return func(o *lockopt.Options) { o.SetLease(d) }
}

// WithOwner sets the owner id instead of drawing a fresh one. New panics if
// id is empty. Default: "<client id>:<sequence>".
func WithOwner(id string) Option {
	return func(o *lockopt.Options) { o.SetOwner(id) }
}

// WithNonReentrant makes a second Lock (or RLock) by a holder of the same
// side fail with redisync.ErrNonReentrant instead of nesting. A writer may
// still take read holds. Default: reentrant.
func WithNonReentrant() Option {
	return func(o *lockopt.Options) { o.NonReentrant = true }
}

// WithWriterPreference makes this handle's waiting writers hold back new
// readers: while such a writer waits, a reader that does not already hold a
// read hold waits too, so the readers drain and the writer gets in however
// busy the readers are. Readers of every redisync handle on the name honour
// it (Redisson's readers do not know of it). Default: off — readers are
// admitted whenever no writer holds the lock, which favours read throughput
// and can starve writers under a steady stream of readers, as in Redisson.
func WithWriterPreference() Option {
	return func(o *lockopt.Options) { o.WriterPreference = true }
}

// WithWaiterTimeout sets how long a waiting writer's claim (writer
// preference) survives without a heartbeat; a waiting Lock heartbeats at
// least every third of it, so only a dead writer's claim lapses. New panics
// if d is below 10 ms. Default: DefaultWaiterTimeout (5 s).
func WithWaiterTimeout(d time.Duration) Option {
	return func(o *lockopt.Options) { o.SetWaiterTimeout(d) }
}

package rlock

import (
	"time"

	"github.com/redisync/redisync/internal/lockopt"
)

// Option configures a Mutex.
type Option func(*lockopt.Options)

// WithLease gives every hold of the Mutex a fixed lease d: no renewal; the
// key expires d after the acquisition unless unlocked before, and the hold
// then reports ErrLockLost. New panics if d is below 1 ms.
// Default: watchdog mode (the Client's watchdog timeout, renewed every third).
func WithLease(d time.Duration) Option {
	return func(o *lockopt.Options) { o.SetLease(d) }
}

// WithOwner sets the owner id instead of drawing a fresh one, so another
// process (or a later run) can resume or release a hold by its id. Handles
// with the same owner id are the same owner: they re-enter each other's holds.
// New panics if id is empty. Default: "<client id>:<sequence>".
func WithOwner(id string) Option {
	return func(o *lockopt.Options) { o.SetOwner(id) }
}

// WithNonReentrant makes a second Lock by the holder fail with
// redisync.ErrNonReentrant instead of nesting. Default: reentrant.
func WithNonReentrant() Option {
	return func(o *lockopt.Options) { o.NonReentrant = true }
}

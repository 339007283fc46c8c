package rlock

import (
	"fmt"
	"time"

	"github.com/redisync/redisync"
)

// Option configures a Mutex.
type Option func(*options)

type options struct {
	lease        time.Duration // 0: watchdog mode
	owner        string        // "": drawn from the Client
	nonReentrant bool
	leaseSet     bool
	ownerSet     bool
}

// WithLease gives every hold of the Mutex a fixed lease d: no renewal; the
// key expires d after the acquisition unless unlocked before, and the hold
// then reports ErrLockLost. New panics if d is below 1 ms.
// Default: watchdog mode (the Client's watchdog timeout, renewed every third).
func WithLease(d time.Duration) Option {
	return func(o *options) { o.lease = d; o.leaseSet = true }
}

// WithOwner sets the owner id instead of drawing a fresh one, so another
// process (or a later run) can resume or release a hold by its id. Handles
// with the same owner id are the same owner: they re-enter each other's holds.
// New panics if id is empty. Default: "<client id>:<sequence>".
func WithOwner(id string) Option {
	return func(o *options) { o.owner = id; o.ownerSet = true }
}

// WithNonReentrant makes a second Lock by the holder fail with
// redisync.ErrNonReentrant instead of nesting. Default: reentrant.
func WithNonReentrant() Option {
	return func(o *options) { o.nonReentrant = true }
}

func (o *options) validate() {
	if o.leaseSet && o.lease < redisync.MinDuration {
		panic(fmt.Sprintf("rlock: lease %v is below the minimum %v", o.lease, redisync.MinDuration))
	}
	if o.ownerSet && o.owner == "" {
		panic("rlock: WithOwner with an empty owner id")
	}
}

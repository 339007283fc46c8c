// Package errs holds the sentinel errors shared by every redisync package.
// The root package re-exports them; internal packages, which the root imports,
// use them from here.
package errs

import (
	"errors"

	"github.com/redis/rueidis"
)

var (
	// ErrNotHeld: the caller's owner does not hold the lock.
	ErrNotHeld = errors.New("redisync: lock not held")
	// ErrLockLost: a hold ended without Unlock (renewal failed, the key was
	// deleted or expired, or the client was closed).
	ErrLockLost = errors.New("redisync: lock lost")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("redisync: client closed")
	// ErrInvalidName: the name cannot be used on this deployment.
	ErrInvalidName = errors.New("redisync: invalid name")
	// ErrInvalidLease: a fixed lease below the minimum (lockopt.MinLease).
	ErrInvalidLease = errors.New("redisync: invalid lease")
	// ErrNonReentrant: a non-reentrant handle tried to lock a lock it already holds.
	ErrNonReentrant = errors.New("redisync: non-reentrant lock already held by this owner")
)

// LostOnClose is the loss reported to holds when their Client is closed: it
// matches both ErrLockLost and ErrClosed, and reads as one line.
var LostOnClose = Join(ErrLockLost, ErrClosed)

// ErrNotReplicated: a write was not acknowledged by the replicas the
// Client's replication policy asks for (and, for an acquisition, was
// rolled back).
var ErrNotReplicated = errors.New("redisync: not acknowledged by enough replicas")

// UnconfirmedError is the error of a write that ran on the master but was
// not acknowledged by the replicas the replication policy asks for: it
// matches ErrNotReplicated (through Err) and keeps the write's own reply,
// for a caller whose answer depends on what the write did (a latch's
// TrySetCount reports whether it created the latch).
type UnconfirmedError struct {
	Err   error               // matches ErrNotReplicated, with the count
	Reply rueidis.RedisResult // the write's reply on the master
}

func (e *UnconfirmedError) Error() string { return e.Err.Error() }

// Unwrap makes errors.Is(err, ErrNotReplicated) hold.
func (e *UnconfirmedError) Unwrap() error { return e.Err }

package rlock

import (
	"time"

	"github.com/redisync/redisync/internal/lockopt"
)

// Option configures a Mutex.
type Option func(*lockopt.Options)

// WithLease gives every hold of the Mutex a fixed lease d: no renewal; the
// key expires d after the acquisition unless unlocked before, and the hold
// then reports ErrLockLost. Below redisync.MinLease (10 ms), every method of
// the handle returns redisync.ErrInvalidLease without I/O. Default: watchdog
// mode (the Client's watchdog timeout, renewed every third).
func WithLease(d time.Duration) Option {
	return func(o *lockopt.Options) { o.SetLease(d) }
}

// WithReentrant makes the handle one owner whose every Lock nests, as
// Redisson's RLock does: a Lock on a handle that is already held (by any
// goroutine) returns at once with the hold count one higher, keeps the
// hold's token, and needs its own Unlock. Goroutines sharing such a handle do
// not exclude each other; give each its own handle. New panics if it is
// combined with WithNonReentrant. Default: off — a Lock on a held handle
// waits for its Unlock, as sync.Mutex.Lock does (see the package doc).
func WithReentrant() Option {
	return func(o *lockopt.Options) { o.Reentrant = true }
}

// WithOwner sets the owner id instead of drawing a fresh one, so handles of
// other processes (or a later run) can share a hold by its id. It implies
// WithReentrant: handles with the same owner id are the same owner, each
// Lock of any of them nests into the owner's hold and each Unlock releases
// one of that handle's own holds (an Unlock on a handle that holds none is
// ErrNotHeld; a crashed process's hold ends with its lease, or with
// ForceUnlock). The id is the owner's field in the lock's hash, as given
// (a Redisson client's "<uuid>:<thread id>" is that client's owner), so it
// must not be a field the lock keeps there itself: an id that is empty,
// starts with "redisync:" (the fencing token, the handles' latches), is
// "mode" (the read-write lock's marker) or ends with ":write" (a read-write
// lock's write field), or that is longer than MaxOwnerLength (4096 bytes),
// makes every method return a *redisync.InvalidOwnerError
// (redisync.ErrInvalidOwner) without I/O. Default: "<client id>:<sequence>".
func WithOwner(id string) Option {
	return func(o *lockopt.Options) { o.SetOwner(id) }
}

// WithNonReentrant makes a Lock or TryLock on a handle that is already held
// (or whose Lock is in progress in another goroutine) return
// redisync.ErrNonReentrant at once instead of waiting. With WithOwner, it
// is the owner that must not hold the lock: a Lock while any handle of the
// owner id holds it returns ErrNonReentrant. New panics if it is combined
// with WithReentrant. Default: off (the Lock waits).
func WithNonReentrant() Option {
	return func(o *lockopt.Options) { o.NonReentrant = true }
}

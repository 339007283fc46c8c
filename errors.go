package redisync

import "github.com/redisync/redisync/internal/errs"

// Sentinel errors shared by every primitive; compare with errors.Is.
var (
	// ErrNotHeld is returned by Unlock when the handle's owner does not hold
	// the lock, and by Err when no hold is current.
	ErrNotHeld = errs.ErrNotHeld
	// ErrLockLost reports a hold that ended without Unlock: the key was
	// deleted or expired, renewal could not be confirmed before the lease ran
	// out, a fixed lease ran out, or the Client was closed while holding.
	ErrLockLost = errs.ErrLockLost
	// ErrClosed is returned by every operation after Client.Close. A hold
	// ended by Close reports an error matching both ErrLockLost and ErrClosed.
	ErrClosed = errs.ErrClosed
	// ErrInvalidName is returned by every method of a handle whose name
	// cannot be used: empty, longer than MaxNameLength, a name that could
	// alias a key derived for another name (one starting with "redisync_",
	// "redisson_lock_queue:" or "redisson_lock_timeout:", or containing
	// ":rwlock_timeout:"), or on a Redis Cluster a name without a
	// hash tag that contains '}' (its derived keys could not share its hash
	// slot). Nothing is sent to Redis.
	ErrInvalidName = errs.ErrInvalidName
	// ErrInvalidLease is returned (wrapped, naming the primitive, the lock
	// and the lease) by every method of a handle made with a fixed lease below
	// MinLease, 0 and negative ones included. Nothing is sent to Redis.
	ErrInvalidLease = errs.ErrInvalidLease
	// ErrNonReentrant is returned by Lock and TryLock of a non-reentrant
	// handle that already holds its lock.
	ErrNonReentrant = errs.ErrNonReentrant
	// ErrNotReplicated is returned (wrapped, with the count) when a write was
	// not acknowledged by the replicas WithWaitReplicas asks for; an
	// acquisition is then rolled back.
	ErrNotReplicated = errs.ErrNotReplicated
	// ErrWrongKind is returned when a key a primitive would use holds
	// something that is not that primitive's layout: a user's data (a hash
	// without a lock's fields, a key of another type), another kind of
	// primitive on the same name, or a lock hash without the expiry every
	// lock has. Nothing was changed. The error is a *WrongKindError naming
	// the key and what was found.
	ErrWrongKind = errs.ErrWrongKind
)

// WrongKindError names the key that holds something else, and what; it
// matches ErrWrongKind.
type WrongKindError = errs.WrongKindError

// ErrInvalidOwner is returned by every method of a lock handle whose owner
// id (WithOwner) cannot be used: it is empty, or it could be taken for a
// field or key the lock keeps beside its owners' (see InvalidOwnerError and
// each lock package's WithOwner). Nothing is sent to Redis.
var ErrInvalidOwner = errs.ErrInvalidOwner

// InvalidOwnerError names the option, the owner id and why it is refused;
// it matches ErrInvalidOwner.
type InvalidOwnerError = errs.InvalidOwnerError

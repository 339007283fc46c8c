package fairlock

import (
	"time"

	"github.com/redisync/redisync/internal/lockopt"
)

// Option configures a Mutex.
type Option func(*lockopt.Options)

// DefaultWaiterTimeout is how long a waiter that stopped heartbeating keeps
// its place in the queue.
const DefaultWaiterTimeout = 5 * time.Second

// WithLease gives every hold a fixed lease d: no renewal; the hold ends d
// after its last acquisition unless unlocked before, and then reports
// ErrLockLost. Below redisync.MinLease (10 ms), every method of the handle
// returns redisync.ErrInvalidLease without I/O. Default: watchdog mode (the
// Client's watchdog timeout, renewed every third).
func WithLease(d time.Duration) Option {
	return func(o *lockopt.Options) { o.SetLease(d) }
}

// WithReentrant makes the handle one owner whose every Lock nests: a Lock
// on a handle that is already held (by any goroutine) returns at once,
// without queueing, with the hold count one higher and the hold's token;
// each Lock needs its own Unlock. Goroutines sharing such a handle do not
// exclude each other. New panics if it is combined with WithNonReentrant.
// Default: off — a Lock on a held handle waits for its Unlock, as
// sync.Mutex.Lock does (see the package doc).
func WithReentrant() Option {
	return func(o *lockopt.Options) { o.Reentrant = true }
}

// WithOwner sets the owner id instead of drawing a fresh one, so handles of
// other processes can share a hold by its id. It implies WithReentrant:
// handles with the same owner id are one owner and nest into its hold; each
// Unlock releases one of that handle's own holds (an Unlock on a handle
// that holds none is ErrNotHeld). The id is the owner's field in the lock's
// hash and its queue entry, as given, so the rules are rlock's: an id that
// is empty, starts with "redisync:", is "mode", ends with ":write" or is
// longer than MaxOwnerLength (4096 bytes) makes every method return a
// *redisync.InvalidOwnerError (redisync.ErrInvalidOwner) without I/O.
// Default: "<client id>:<sequence>".
func WithOwner(id string) Option {
	return func(o *lockopt.Options) { o.SetOwner(id) }
}

// WithNonReentrant makes a Lock or TryLock on a handle that is already held
// (or whose Lock is in progress in another goroutine) return
// redisync.ErrNonReentrant at once instead of waiting; with WithOwner, a
// Lock while the owner id holds the lock does. New panics if it is combined
// with WithReentrant. Default: off (the Lock waits).
func WithNonReentrant() Option {
	return func(o *lockopt.Options) { o.NonReentrant = true }
}

// MinWaiterTimeout is the shortest waiter timeout in effect: a shorter d
// given to WithWaiterTimeout is raised to it (a busy machine stalls a
// process long enough to cost a live waiter with a shorter one its place).
const MinWaiterTimeout = time.Second

// WithWaiterTimeout sets how long this handle's place in the queue survives
// without a heartbeat. A waiting Lock heartbeats every third of it (counted
// from when the previous heartbeat was sent), so a waiter is dropped only
// when its process died, lost its connection, or stalled for about two
// thirds of it; a live waiter is never evicted however long it waits.
// Shorter means a dead waiter at the head delays the others less. New panics
// if d is below 10 ms; a d below MinWaiterTimeout (1 s) is raised to it.
// Default: DefaultWaiterTimeout (5 s).
func WithWaiterTimeout(d time.Duration) Option {
	return func(o *lockopt.Options) { o.SetWaiterTimeout(d) }
}

// DefaultRedissonWait is Redisson's default thread wait time for RFairLock
// (5 minutes), the deadline slot each waiter gets in its queue.
const DefaultRedissonWait = 5 * time.Minute

// WithRedissonQueue makes the handle wait in Redisson's RFairLock queue
// (the list "redisson_lock_queue:{N}", the deadline zset
// "redisson_lock_timeout:{N}", and the channel
// "redisson_lock__channel:{N}:<owner>"), so Java and Go waiters on one name
// are granted in one arrival order. wait is the queue's thread wait time,
// which must equal the Java clients' (Redisson's default:
// DefaultRedissonWait; 0 means that). A waiter that dies delays the queue,
// as in Redisson (its queue has no heartbeat), by up to wait plus the lease
// the lock had left when the waiter joined, since its deadline is set then
// (with Redisson's default and the watchdog's lease, 5 min 30 s). What
// a mixed queue guarantees: docs/redisson.md. Handles with and without this
// option on one name exclude each other but keep separate queues.
// Default: off (redisync's own queue, with heartbeats and server time).
func WithRedissonQueue(wait time.Duration) Option {
	return func(o *lockopt.Options) {
		if wait <= 0 {
			wait = DefaultRedissonWait
		}
		o.RedissonQueue = wait
	}
}

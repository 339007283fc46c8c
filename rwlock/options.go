package rwlock

import (
	"time"

	"github.com/redisync/redisync/internal/lockopt"
)

// Option configures an RWMutex.
type Option func(*lockopt.Options)

// DefaultWaiterTimeout is how long a waiting writer's claim (writer
// preference) survives without a heartbeat.
const DefaultWaiterTimeout = 5 * time.Second

// WithLease gives every hold, read or write, a fixed lease d: no renewal; the
// hold ends d after its last acquisition unless released before, and then
// reports ErrLockLost. Below redisync.MinLease (10 ms), every method of the
// handle returns redisync.ErrInvalidLease without I/O. Default: watchdog mode
// (the Client's watchdog timeout, renewed every third).
func WithLease(d time.Duration) Option {
	return func(o *lockopt.Options) { o.SetLease(d) }
}

// WithReentrant makes the handle one owner whose Locks nest, as Redisson's
// RReadWriteLock does: a Lock (or RLock) on a side the handle already holds
// returns at once with that side's count one higher, the write holder may
// take read holds (releasing the write hold then downgrades the lock), and a
// Lock by a handle that only reads returns ErrUpgrade at once. Goroutines
// sharing such a handle do not exclude each other. New panics if it is
// combined with WithNonReentrant. Default: off — the handle behaves like a
// sync.RWMutex shared by its goroutines (see the package doc).
func WithReentrant() Option {
	return func(o *lockopt.Options) { o.Reentrant = true }
}

// WithOwner sets the owner id instead of drawing a fresh one. It implies
// WithReentrant: handles with the same owner id are one owner and nest into
// its holds; each Unlock or RUnlock releases one of that handle's own holds
// (none held: ErrNotHeld). The id is used as given (a Redisson client's
// "<uuid>:<thread id>" is that client's owner): it is the read field
// "<id>", the write field "<id>:write", and part of every read hold's key
// "<base>:<id>:rwlock_timeout:<n>". So it must be one non-empty part
// without ':' that is not all digits ("job-7"), or "<part>:<digits>"
// ("job:7", Redisson's shape), and not "mode", nor start with "redisync:",
// nor end with ":write": otherwise two locks' read holds could share a key
// (lock "{t}" read by "u:7" and lock "{t}:u" read by "7"), or the id could
// be taken for a field the lock keeps itself. Such an id, or one longer
// than MaxOwnerLength (4096 bytes), makes every method return a
// *redisync.InvalidOwnerError (redisync.ErrInvalidOwner) without I/O. One
// case no rule on the id can catch: locks "x" and "{x}" share the read-hold
// base "{x}" (Redisson's naming), so one owner id reading both shares their
// read-hold keys, and one lock's release ends the other's read hold (its
// renewal reports the loss); give such handles different ids.
// Default: "<client id>:<sequence>".
func WithOwner(id string) Option {
	return func(o *lockopt.Options) { o.SetOwner(id) }
}

// WithNonReentrant makes a Lock, TryLock, RLock or TryRLock that would wait
// for a hold of this same handle return redisync.ErrNonReentrant at once:
// a Lock while the handle holds (or is taking) either side, an RLock while
// it writes, and a second RLock while it reads (one read hold per handle).
// With WithOwner, it is the owner id's holds that count, and the writer may
// still take read holds. New panics if it is combined with WithReentrant.
// Default: off (such calls wait).
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
// if d is below 10 ms; a d below 1 s is raised to 1 s (a busy machine stalls
// a live writer longer than two thirds of a shorter one). Default:
// DefaultWaiterTimeout (5 s).
func WithWaiterTimeout(d time.Duration) Option {
	return func(o *lockopt.Options) { o.SetWaiterTimeout(d) }
}

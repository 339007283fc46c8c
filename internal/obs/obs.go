// Package obs defines the events the engine and the primitives report. The
// root package declares the public twins (redisync.Event, EventKind,
// Observer) with the same fields and kind values, and hands each event to a
// user's Observer through an adapter: this package cannot use the root
// types, since the root imports the engine that imports this package.
package obs

import "time"

// Kind says what happened.
type Kind int

// The kinds of events.
const (
	// Acquired: a hold (lock, read or write side, or permits) was granted.
	// Wait is the time from the call to the grant, Latency the granting round
	// trip, Waited whether the caller had to wait for another holder (a
	// hand-off).
	Acquired Kind = iota + 1
	// Released: a hold ended by its release. Held is how long it lasted.
	Released
	// Lost: a hold ended without its release (lease ran out, key deleted,
	// Client closed). Held is how long it lasted, Err the cause.
	Lost
	// Renewed: the watchdog renewed Count holds in one batch; Latency is the
	// batch's round trip.
	Renewed
	// RenewFailed: Count holds of a renewal batch got no answer (Err: the
	// distinct errors, joined); they are retried at the watchdog's paced
	// interval until their deadlines. The other holds of the batch are
	// judged by their own replies.
	RenewFailed
	// EvictionPolicy: a node's maxmemory-policy may evict lock keys
	// (redisync.WithEvictionCheck); reported once per node, at the first
	// acquisition that looked. Primitive and Name are that acquisition's,
	// Err the finding.
	EvictionPolicy
)

// String names the kind as the metrics do.
func (k Kind) String() string {
	switch k {
	case Acquired:
		return "acquired"
	case Released:
		return "released"
	case Lost:
		return "lost"
	case Renewed:
		return "renewed"
	case RenewFailed:
		return "renew_failed"
	case EvictionPolicy:
		return "eviction_policy"
	}
	return "unknown"
}

// Event is one observation.
type Event struct {
	Kind Kind
	// Primitive is "rlock", "fairlock", "rwlock.read", "rwlock.write" or
	// "semaphore"; for renewal batches the layout renewed: "lock" (rlock
	// and fairlock), "rwlock", "semaphore", or "redlock" (one event per
	// node, from that node's Client).
	Primitive string
	Name      string // the lock or semaphore name ("" for renewal batches)
	Wait      time.Duration
	Latency   time.Duration
	Waited    bool
	Held      time.Duration
	Count     int
	Err       error
}

// Observer receives a Client's events. Observe is called synchronously from
// the goroutine where the event happens (a caller's, or the watchdog's), so
// it must be fast and must not block; it may be called concurrently.
type Observer interface {
	Observe(Event)
}

// Target names the hold an event is about.
type Target struct {
	Primitive string
	Name      string
}

package redisync

import (
	"time"

	"github.com/redisync/redisync/internal/obs"
)

// Observer receives a Client's events (WithObserver): grants, releases,
// losses and renewal batches of every primitive built on the Client. Observe
// is called synchronously from the goroutine where the event happens (a
// caller's, or the watchdog's), so it must be fast and must not block; it
// may be called concurrently. The redisyncotel module adapts it to
// OpenTelemetry metrics.
type Observer interface {
	Observe(Event)
}

// ObserverFunc lets an ordinary function be an Observer.
type ObserverFunc func(Event)

// Observe calls f(ev).
func (f ObserverFunc) Observe(ev Event) { f(ev) }

// Event is one observation. Which fields are filled in depends on Kind: see
// each EventKind constant.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Primitive names who it happened to: "rlock", "fairlock",
	// "rwlock.read", "rwlock.write", "semaphore" or "redlock" for a hold;
	// for renewal batches (EventRenewed, EventRenewFailed) the layout that
	// was renewed: "lock" (rlock and fairlock), "rwlock", "semaphore", or
	// "redlock" (one event per node, from that node's Client).
	Primitive string
	// Name is the lock's or the semaphore's name; "" for renewal batches,
	// which renew holds of many names at once.
	Name string
	// Wait (EventAcquired) is the time from the Lock or Acquire call to the
	// grant, waiting for other holders included.
	Wait time.Duration
	// Latency is the round trip of the command that granted
	// (EventAcquired) or of the renewal batch (EventRenewed).
	Latency time.Duration
	// Waited (EventAcquired) reports whether another holder had to go
	// first: the grant was a hand-off, not a free lock.
	Waited bool
	// Held (EventReleased, EventLost) is how long the hold lasted.
	Held time.Duration
	// Count (EventRenewed, EventRenewFailed) is how many holds the batch
	// renewed, or failed to renew.
	Count int
	// Err is the cause of a loss (EventLost: matches ErrLockLost, and
	// ErrClosed when the Client was closed) or of a failed renewal batch
	// (EventRenewFailed: the distinct errors, joined); for
	// EventEvictionPolicy the *EvictionPolicyError.
	Err error
}

// EventKind says what an Event reports.
type EventKind int

// The kinds of events. The values are those of the events' internal
// source, so that a conversion is a copy.
const (
	// EventAcquired: a hold (a lock, a read or write side, or permits) was
	// granted. Wait is the time from the call to the grant, Latency the
	// granting round trip, Waited whether another holder had to go first
	// (a hand-off).
	EventAcquired = EventKind(obs.Acquired)
	// EventReleased: a hold ended by its release; Held is how long it lasted.
	EventReleased = EventKind(obs.Released)
	// EventLost: a hold ended without its release (lease ran out, key
	// deleted, Client closed); Held is how long it lasted, Err the cause.
	EventLost = EventKind(obs.Lost)
	// EventRenewed: one watchdog batch renewed Count holds; Latency is its
	// round trip. Primitive names the layout: "lock", "rwlock", "semaphore",
	// "redlock".
	EventRenewed = EventKind(obs.Renewed)
	// EventRenewFailed: Count holds of a renewal batch got no answer (Err:
	// the distinct errors, joined); they are retried at the watchdog's
	// paced interval until their deadlines. The other holds of the batch are
	// judged by their own replies.
	EventRenewFailed = EventKind(obs.RenewFailed)
	// EventEvictionPolicy: a node's maxmemory-policy may evict lock keys
	// (WithEvictionCheck). Reported once per node, at the first acquisition
	// that found it; Primitive and Name are that acquisition's, Err is an
	// *EvictionPolicyError naming the node and its policy.
	EventEvictionPolicy = EventKind(obs.EvictionPolicy)
)

// String names the kind as the metrics do: "acquired", "released", "lost",
// "renewed", "renew_failed", "eviction_policy" ("unknown" for any other
// value).
func (k EventKind) String() string { return obs.Kind(k).String() }

// WithObserver reports the Client's events to o. Default: none.
func WithObserver(o Observer) Option {
	return func(opts *options) {
		if o == nil {
			opts.observer = nil
			return
		}
		opts.observer = observerAdapter{o}
	}
}

// observerAdapter hands the engine's events (internal/obs, which cannot
// import this package: the root imports the engine) to a user's Observer as
// root Events. The two structs have the same fields, so the conversion is a
// copy.
type observerAdapter struct{ o Observer }

func (a observerAdapter) Observe(ev obs.Event) {
	a.o.Observe(Event{
		Kind: EventKind(ev.Kind), Primitive: ev.Primitive, Name: ev.Name,
		Wait: ev.Wait, Latency: ev.Latency, Waited: ev.Waited,
		Held: ev.Held, Count: ev.Count, Err: ev.Err,
	})
}

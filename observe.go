package redisync

import "github.com/redisync/redisync/internal/obs"

// Observer receives a Client's events (WithObserver): grants, releases,
// losses and renewal batches of every primitive built on the Client. Observe
// is called synchronously from the goroutine where the event happens, so it
// must be fast and must not block; it may be called concurrently. The
// redisyncotel module adapts it to OpenTelemetry metrics.
type Observer = obs.Observer

// Event is one observation; see EventKind for what each kind fills in.
type Event = obs.Event

// EventKind says what an Event reports.
type EventKind = obs.Kind

// The kinds of events.
const (
	// EventAcquired: a hold was granted. Wait is the time from the call to
	// the grant, Latency the granting round trip, Waited whether another
	// holder had to go first (a hand-off).
	EventAcquired = obs.Acquired
	// EventReleased: a hold ended by its release; Held is how long it lasted.
	EventReleased = obs.Released
	// EventLost: a hold ended without its release; Held and the cause Err.
	EventLost = obs.Lost
	// EventRenewed: one watchdog batch renewed Count holds; Latency is its
	// round trip. Primitive names the layout: "lock", "rwlock", "semaphore".
	EventRenewed = obs.Renewed
	// EventRenewFailed: a renewal batch of Count holds failed (Err); it is
	// retried until the holds' deadlines.
	EventRenewFailed = obs.RenewFailed
)

// WithObserver reports the Client's events to o. Default: none.
func WithObserver(o Observer) Option {
	return func(opts *options) { opts.observer = o }
}

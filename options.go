package redisync

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/redisync/redisync/internal/obs"
)

// Defaults of a Client.
const (
	// DefaultWatchdogTimeout is the lease of holds in watchdog mode, renewed
	// every third of it (Redisson's lockWatchdogTimeout).
	DefaultWatchdogTimeout = 30 * time.Second
	// DefaultMaxPoll bounds one wait between two acquisition attempts.
	DefaultMaxPoll = time.Second
	// MinDuration is the smallest poll interval or replication timeout
	// accepted.
	MinDuration = time.Millisecond
	// MinLease is the shortest lease accepted: a fixed lease (WithLease of
	// rlock, fairlock, rwlock, semaphore, redlock), the watchdog timeout and
	// the command's --lease. A hold counts as granted only when the
	// acquire's reply arrives before its lease, less the drift margin (1%
	// plus 2 ms), has run out by the local clock; a reply later than that is
	// given back, as the lease may already be someone else's. 10 ms leaves
	// 7.9 ms for the round trip — a loaded machine's acquire takes a few —
	// while 1 ms and 2 ms leave none, and every grant would be given back.
	// A handle with a shorter fixed lease returns ErrInvalidLease from every
	// method without I/O; New panics on a shorter watchdog timeout.
	MinLease = 10 * time.Millisecond
)

// Option configures a Client.
type Option func(*options)

type options struct {
	watchdogTimeout time.Duration
	maxPoll         time.Duration
	logger          *slog.Logger
	observer        obs.Observer // the user's Observer, adapted (observe.go)
	replication     replication
	holder          holderOptions // holder_options.go
	eviction        EvictionCheck // eviction.go
}

func defaultOptions() options {
	return options{watchdogTimeout: DefaultWatchdogTimeout, maxPoll: DefaultMaxPoll}
}

// WithWatchdogTimeout sets the lease of holds in watchdog mode (locks created
// without a fixed lease); the watchdog renews them every d/3 and reports
// them lost when it cannot confirm a renewal within d. New panics if d is
// below MinLease (10 ms). Default: 30s.
func WithWatchdogTimeout(d time.Duration) Option {
	return func(o *options) { o.watchdogTimeout = d }
}

// WithMaxPoll sets the longest a waiter sleeps between two attempts when no
// wake-up arrives: the bound on the delay a lost pub/sub message can cause.
// New panics if d is below 1 ms. Default: 1s.
func WithMaxPoll(d time.Duration) Option {
	return func(o *options) { o.maxPoll = d }
}

// WithLogger makes the Client log what it cannot report as an error: at
// Warn, a hold that was lost and a renewal batch that failed (it is
// retried), and a subscription that broke and is being restored.
// Default: no logging.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// minWatchdogTimeout is MinLease: the watchdog timeout is the lease of
// every hold in watchdog mode.
const minWatchdogTimeout = MinLease

func (o *options) validate() {
	if o.watchdogTimeout < minWatchdogTimeout {
		panic(fmt.Sprintf("redisync: watchdog timeout %v is below the minimum %v", o.watchdogTimeout, minWatchdogTimeout))
	}
	o.replication.validate()
	o.holder.validate()
	if o.eviction < EvictionWarn || o.eviction > EvictionOff {
		panic(fmt.Sprintf("redisync: unknown eviction check %v", o.eviction))
	}
	if o.maxPoll < MinDuration {
		panic(fmt.Sprintf("redisync: max poll %v is below the minimum %v", o.maxPoll, MinDuration))
	}
}

package redlock

import (
	"fmt"
	"time"
)

// Option configures a Mutex.
type Option func(*options)

type options struct {
	lease                    time.Duration // 0: watchdog mode
	nodeTimeout              time.Duration
	retryMin, retryMax       time.Duration
	quarantine               time.Duration
	leaseSet, nodeTimeoutSet bool
	retrySet, quarantineSet  bool
	reentrant                bool
	nonReentrant             bool
}

// MaxNameLength is the longest lock name accepted, in bytes (as for every
// lock kind).
const MaxNameLength = 4096

// WithReentrant makes the Mutex one owner whose every Lock nests (without
// I/O): each Lock needs its own Unlock, and goroutines sharing it are
// inside together. Default: a Mutex behaves like sync.Mutex — a Lock on a
// held Mutex, from any goroutine, waits for its Unlock.
func WithReentrant() Option {
	return func(o *options) { o.reentrant = true }
}

// WithNonReentrant makes a Lock or TryLock on a Mutex that is already held
// (or whose Lock is in progress in another goroutine) return
// redisync.ErrNonReentrant at once instead of waiting, as the option of the
// same name does for every lock kind. New panics if it is combined with
// WithReentrant. Default: off (the Lock waits).
func WithNonReentrant() Option {
	return func(o *options) { o.nonReentrant = true }
}

// WithLease gives every hold a fixed lease d: no renewal; the hold ends at
// its validity (d minus the acquisition time and drift) unless unlocked
// before. Below redisync.MinLease (10 ms), every method returns
// redisync.ErrInvalidLease without I/O. Default: watchdog mode — the
// first client's watchdog timeout, renewed every third on a majority.
func WithLease(d time.Duration) Option {
	return func(o *options) { o.lease, o.leaseSet = d, true }
}

// WithNodeTimeout bounds each node's answer in an acquisition, so a slow
// or dead node costs at most d of the validity. New panics if d is below
// 1 ms or not below the lease (with a WithLease below redisync.MinLease,
// every method returns ErrInvalidLease instead). A reply that arrived before the wait
// stopped counts even if it came in after d (the validity check covers the
// time), and a late node's acquire is not abandoned: a Client task awaits
// its reply and releases a grant nobody uses. d counts only time this
// process was running: when the whole process stalls (a loaded machine, a
// long GC pause) the replies wait unread and the wait is extended by the
// stall, up to half the lease — a client stall is not a node failure, and
// the validity still counts it. Default: a twentieth of the lease, at least
// 100 ms (a busy machine stalls a client that long) but at most a quarter
// of the lease, and at most 250 ms.
func WithNodeTimeout(d time.Duration) Option {
	return func(o *options) { o.nodeTimeout, o.nodeTimeoutSet = d, true }
}

// WithRetryDelay sets the random wait between two attempts of Lock, drawn
// uniformly from [lo, hi] so that contenders fall out of step. New panics
// unless 0 < lo <= hi. Default: 20 ms to 120 ms.
func WithRetryDelay(lo, hi time.Duration) Option {
	return func(o *options) { o.retryMin, o.retryMax, o.retrySet = lo, hi, true }
}

// WithRestartQuarantine sets how long a node that restarted (its run_id
// changed) stays out of quorums: it must cover the longest lease any client
// of the name may hold. New panics if d is negative. Default: the longest
// of this Mutex's lease and every client's watchdog timeout.
func WithRestartQuarantine(d time.Duration) Option {
	return func(o *options) { o.quarantine, o.quarantineSet = d, true }
}

// validate panics on an out-of-range option. A node timeout is compared
// with the lease only when the lease can be used (leaseOK): a refused one
// is the error every method returns (ErrInvalidLease), and the caller never
// gave the lease it stands in for.
func (o *options) validate(lease time.Duration, leaseOK bool) {
	if o.nodeTimeoutSet && (o.nodeTimeout < time.Millisecond || (leaseOK && o.nodeTimeout >= lease)) {
		panic(fmt.Sprintf("redlock: node timeout %v must be at least 1ms and below the lease %v", o.nodeTimeout, lease))
	}
	if o.retrySet && (o.retryMin <= 0 || o.retryMax < o.retryMin) {
		panic(fmt.Sprintf("redlock: retry delay [%v, %v] must satisfy 0 < lo <= hi", o.retryMin, o.retryMax))
	}
	if o.quarantineSet && o.quarantine < 0 {
		panic("redlock: negative restart quarantine")
	}
	if o.reentrant && o.nonReentrant {
		panic("redlock: WithReentrant and WithNonReentrant contradict each other")
	}
}

// Node timeout defaults: a twentieth of the lease, but at least
// minNodeTimeout — a loaded machine stalls a client for tens of
// milliseconds, and a node timeout below that fails every node at once —
// and at most a quarter of the lease (three quarters of the validity are
// left) and maxNodeTimeout.
const (
	minNodeTimeout = 100 * time.Millisecond
	maxNodeTimeout = 250 * time.Millisecond
)

func defaultNodeTimeout(lease time.Duration) time.Duration {
	return min(max(lease/20, minNodeTimeout), lease/4, maxNodeTimeout)
}

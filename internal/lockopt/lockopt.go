// Package lockopt holds the options and name checks that every lock package
// (rlock, fairlock, rwlock) shares, so each package's Option type is a thin
// wrapper and the rules are stated once.
package lockopt

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/keys"
)

// MaxNameLength is the longest lock name accepted, in bytes. The name is
// sent with every command and is part of every wake-up channel.
const MaxNameLength = 4096

// MaxOwnerLength is the longest owner id WithOwner accepts, in bytes, as
// long as the longest name: an owner id is sent with every command, is a
// field of the lock's hash, and is part of every fair-lock waiter's channel
// and every read hold's key.
const MaxOwnerLength = MaxNameLength

// MinDuration is a millisecond: a waiter timeout is at least 10 of it.
const MinDuration = time.Millisecond

// MinLease is the shortest lease accepted: redisync.MinLease, whose doc
// says why.
const MinLease = 10 * time.Millisecond

// LeaseErr is the error of primitive pkg's handle on name with a fixed
// lease d, nil when d is at least MinLease: the handle's methods return it
// before any I/O (see redisync.ErrInvalidLease). It names the lock, as the
// name and owner id errors do.
func LeaseErr(pkg, name string, d time.Duration) error {
	if d >= MinLease {
		return nil
	}
	return fmt.Errorf("%s %q: lease %v is below MinLease (%v): no grant would outlive its reply: %w", pkg, name, d, MinLease, errs.ErrInvalidLease)
}

// DefaultWaiterTimeout is how long a waiter that stopped heartbeating keeps
// its place in a queue (fairlock, rwlock writer preference).
const DefaultWaiterTimeout = 5 * time.Second

// MinWaiterTimeout is the shortest waiter timeout in effect: a shorter one
// asked for is raised to it. A waiter heartbeats every third of its
// timeout, so its place survives a stall of its process (or of Redis) of
// about two thirds of it, minus a round trip; evicted, a live waiter
// silently loses its place and joins again at the back, which breaks the
// arrival order the queue promises. A loaded machine stalls processes for
// hundreds of milliseconds: a plain Go timer beside two `make test` runs
// (load 10-15 on 2 cores) fired up to 320 ms late in 30 s (p99.9 213 ms),
// and a 100 ms waiter timeout lost live waiters' places there. One second
// survives twice the worst of that. A lease has no such floor because a
// lost lease is signalled (Done, ErrLockLost); a lost place is not.
const MinWaiterTimeout = time.Second

// Options are the settings of one lock handle.
type Options struct {
	Lease            time.Duration // 0: watchdog mode
	Owner            string        // "": drawn from the Client
	Reentrant        bool          // WithReentrant: every Lock of the handle nests
	NonReentrant     bool
	WaiterTimeout    time.Duration // 0: DefaultWaiterTimeout
	WriterPreference bool
	RedissonQueue    time.Duration // fairlock.WithRedissonQueue: the thread wait time; 0: off

	leaseSet, ownerSet, waiterTimeoutSet bool
}

// SetLease records WithLease(d).
func (o *Options) SetLease(d time.Duration) { o.Lease, o.leaseSet = d, true }

// SetOwner records WithOwner(id).
func (o *Options) SetOwner(id string) { o.Owner, o.ownerSet = id, true }

// SetWaiterTimeout records WithWaiterTimeout(d).
func (o *Options) SetWaiterTimeout(d time.Duration) { o.WaiterTimeout, o.waiterTimeoutSet = d, true }

// LeaseErr is LeaseErr for WithLease's lease, nil when none was set.
func (o *Options) LeaseErr(pkg, name string) error {
	if !o.leaseSet {
		return nil
	}
	return LeaseErr(pkg, name, o.Lease)
}

// Validate panics, naming the package, on an out-of-range option. A lease
// and an owner id are not among them: see LeaseErr and CheckOwner.
func (o *Options) Validate(pkg string) {
	if o.waiterTimeoutSet && o.WaiterTimeout < 10*MinDuration {
		panic(fmt.Sprintf("%s: waiter timeout %v is below the minimum %v", pkg, o.WaiterTimeout, 10*MinDuration))
	}
	if o.Reentrant && o.NonReentrant {
		panic(pkg + ": WithReentrant and WithNonReentrant contradict each other")
	}
	if o.WaiterTimeout == 0 {
		o.WaiterTimeout = DefaultWaiterTimeout
	}
	o.WaiterTimeout = max(o.WaiterTimeout, MinWaiterTimeout)
}

// CheckOwner returns the error every method of pkg's handle on name reports
// for its WithOwner id, nil when there is none or it can be used: an
// *errs.InvalidOwnerError (ErrInvalidOwner) when the id is longer than
// MaxOwnerLength, empty, or could be taken for a field or key the lock
// keeps beside its owners' (see keys.ReservedOwner; a read-write lock's
// owner ids also name its read-hold keys). Owner ids are often data (a job
// id, a host), so a bad one is an error for the caller to handle, never a
// panic; it costs no I/O.
func (o *Options) CheckOwner(pkg, name string) error {
	if !o.ownerSet {
		return nil
	}
	if len(o.Owner) > MaxOwnerLength {
		why := fmt.Sprintf("it is %d bytes, longer than MaxOwnerLength (%d)", len(o.Owner), MaxOwnerLength)
		return &errs.InvalidOwnerError{Package: pkg, Name: name, Option: "WithOwner", Owner: o.Owner, Reason: why}
	}
	if why := keys.ReservedOwner(o.Owner, pkg == "rwlock"); why != "" {
		return &errs.InvalidOwnerError{Package: pkg, Name: name, Option: "WithOwner", Owner: o.Owner, Reason: why}
	}
	return nil
}

// Gated reports whether the handle has a local gate (see hold.Gate): by
// default it has, so goroutines sharing it exclude each other. A handle that
// asked for re-entry has none, and neither has one with an explicit owner
// id: an owner id shared by several handles (or processes) is owner
// semantics, where every Lock of that owner nests.
func (o *Options) Gated() bool { return !o.Reentrant && !o.ownerSet }

// Resolve applies the options' defaults for engine e: the owner id, and the
// lease with whether it is fixed (no renewal).
func (o *Options) Resolve(e *engine.Engine) (owner string, lease time.Duration, fixed bool) {
	owner = o.Owner
	if owner == "" {
		owner = e.NewOwner()
	}
	if o.leaseSet {
		return owner, max(o.Lease, MinLease), true // below MinLease: LeaseErr refuses every call
	}
	return owner, e.Config.WatchdogTimeout, false
}

// CheckName returns the error a handle's methods report for its name, nil
// when the name can be used: ErrInvalidName when it is empty, longer than
// MaxNameLength, when it could alias a key derived for another name
// (keys.Reserved: it starts with "redisync_" or contains ":rwlock_timeout:"),
// or (on a Redis Cluster) when its keys cannot share one slot (for rlock and
// rwlock also Redisson's channel and read-hold keys: "a{b", "{}x"). Names are
// often data (an order id, a tenant), so a bad one is an error for the
// caller to handle, never a panic.
func CheckName(pkg string, e *engine.Engine, name string) error {
	if name == "" {
		return fmt.Errorf("%s: empty lock name: %w", pkg, errs.ErrInvalidName)
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("%s: lock name of %d bytes exceeds MaxNameLength (%d): %w", pkg, len(name), MaxNameLength, errs.ErrInvalidName)
	}
	if why := keys.Reserved(name); why != "" {
		// It could be one of the keys derived for another name (issue 13).
		return fmt.Errorf("%s: name %q %s: %w", pkg, name, why, errs.ErrInvalidName)
	}
	if _, ok := keys.Derived("", name); !ok && e.Cluster {
		return fmt.Errorf("%s: name %q has no hash tag and contains '}', so its keys cannot share a Cluster slot: %w", pkg, name, errs.ErrInvalidName)
	}
	// rlock and rwlock share Redisson's channel and read-hold names, which
	// follow Redisson's "contains '{'" rule (internal/keys' package doc).
	if _, ok := keys.Derived(keys.LockChannelPrefix, name); !ok && e.Cluster && (pkg == "rlock" || pkg == "rwlock") {
		return fmt.Errorf("%s: name %q contains a brace but no hash tag, so Redisson's channel for it is in another Cluster slot: %w", pkg, name, errs.ErrInvalidName)
	}
	return nil
}

// Check is the guard at the top of every handle method: it panics on a nil
// ctx and returns the name error, ErrClosed, or ctx.Err().
func Check(pkg string, e *engine.Engine, nameErr error, ctx context.Context) error {
	if ctx == nil {
		panic(pkg + ": nil Context")
	}
	if nameErr != nil {
		return nameErr
	}
	if e.IsClosed() {
		return errs.ErrClosed
	}
	return ctx.Err()
}

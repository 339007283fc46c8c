package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/scripts"
	"github.com/redisync/redisync/watchdog"
)

// MaxNameLength is the longest lock name accepted, in bytes. The name is
// sent with every command and is part of every wake-up channel.
const MaxNameLength = 4096

// Mutex is a reentrant distributed lock. A Mutex value is one owner; see the
// package doc. All methods are safe for concurrent use.
type Mutex struct {
	e            *engine.Engine
	name         string
	nameErr      error // the name cannot be used on this deployment
	keys         scripts.LockKeys
	owner        string
	lease        time.Duration // the lease of each hold
	leaseMs      string
	fixed        bool // WithLease: no renewal
	nonReentrant bool

	// op serializes this handle's acquire and release round trips, so the
	// hold count it sends as "expected" is never stale.
	op sync.Mutex

	mu       sync.Mutex
	holds    int64           // the owner's hold count in Redis, as last seen
	token    uint64          // fencing token of the current hold
	done     chan struct{}   // closed when the current hold ends
	err      error           // nil while held; why the last hold ended otherwise
	renewal  *watchdog.Lease // the current hold's registration with the watchdog
	lost     bool            // the last hold was lost: Unlock cleans up and reports it
	released bool            // a final release was sent and its reply lost
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// New returns a lock named name on c. It does no I/O.
//
// The lock is the Redis hash named exactly name (see the package doc for the
// layout). New panics if c is nil, name is empty or longer than
// MaxNameLength, or an option is out of range.
func New(c *redisync.Client, name string, opts ...Option) *Mutex {
	e := engine.FromClient(c)
	if name == "" {
		panic("rlock: empty lock name")
	}
	if len(name) > MaxNameLength {
		panic(fmt.Sprintf("rlock: lock name of %d bytes exceeds MaxNameLength (%d)", len(name), MaxNameLength))
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	o.validate()
	m := &Mutex{e: e, name: name, owner: o.owner, nonReentrant: o.nonReentrant, done: closedChan, err: redisync.ErrNotHeld}
	if m.owner == "" {
		m.owner = e.NewOwner()
	}
	m.lease, m.fixed = e.Config.WatchdogTimeout, false
	if o.lease > 0 {
		m.lease, m.fixed = o.lease, true
	}
	m.leaseMs = engine.Millis(m.lease)
	channel, okChannel := keys.Derived(keys.LockChannelPrefix, name)
	token, _ := keys.Derived(keys.LockTokenPrefix, name)
	m.keys = scripts.LockKeys{Lock: name, Channel: channel, Token: token}
	if !okChannel && e.Cluster {
		m.nameErr = fmt.Errorf("rlock: name %q has no hash tag and contains '}', so its keys cannot share a Cluster slot: %w", name, redisync.ErrInvalidName)
	}
	return m
}

// Name returns the lock's name (the key of its hash).
func (m *Mutex) Name() string { return m.name }

// Owner returns the owner id this handle locks as.
func (m *Mutex) Owner() string { return m.owner }

// Lock blocks until the lock is held by this handle or ctx ends. Locking a
// lock the handle already holds nests (unless WithNonReentrant): each Lock
// needs its own Unlock, and the hold keeps its token.
//
// It returns nil, ctx.Err() unwrapped when ctx ends (nothing is left held),
// redisync.ErrClosed, redisync.ErrNonReentrant, or an error from Redis.
// Lock panics on a nil ctx.
func (m *Mutex) Lock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	return m.e.Acquire(ctx, m.keys.Channel, m.attempt)
}

// TryLock makes exactly one attempt: (true, nil) when the handle now holds
// the lock, (false, nil) when another owner holds it. Errors are as Lock's.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	ok, _, err := m.attempt(ctx)
	return ok, err
}

// Unlock releases one hold of this handle. After the last one the lock is
// free and one waiter is woken.
//
// It returns redisync.ErrNotHeld when this owner holds no lock, and
// redisync.ErrLockLost when the hold was lost (Unlock then removes whatever
// is left of it). If Unlock returns another error, the release may or may
// not have happened: calling Unlock again is safe and never releases twice.
// Unlock panics on a nil ctx.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	m.op.Lock()
	defer m.op.Unlock()

	m.mu.Lock()
	holds, lost, released, renewal := m.holds, m.lost, m.released, m.renewal
	lostErr := m.err
	m.mu.Unlock()

	switch {
	case holds == 0 && lost:
		// Remove whatever is left of the lost hold, then report the loss.
		_, err := m.release(ctx, scripts.ReleaseAll)
		if err == nil {
			m.mu.Lock()
			m.lost = false
			m.mu.Unlock()
		}
		return lostErr
	case holds == 0 && released:
		// The reply to the final release was lost: confirm it.
		r, err := m.release(ctx, 1)
		if err != nil {
			return err
		}
		m.mu.Lock()
		m.released = false
		m.mu.Unlock()
		if r.Acted || r.Count == 0 {
			return nil
		}
		return redisync.ErrNotHeld
	case holds == 0:
		// No hold on this handle: an owner resumed with WithOwner may still
		// hold one in Redis.
		r, err := m.release(ctx, scripts.ReleaseAny)
		if err != nil {
			return err
		}
		if !r.Acted {
			return redisync.ErrNotHeld
		}
		return nil
	}

	final := holds == 1
	if final && !m.e.Watchdog.Remove(renewal) {
		// Lost while we were getting here; the watchdog has told the hold.
		return m.unlockLost(ctx)
	}
	sent := time.Now()
	r, err := m.release(ctx, holds)
	if err == nil && !r.Acted && r.Count > 0 {
		if r.Count == holds-1 {
			// An earlier call whose reply was lost already did it.
			r.Acted = true
		} else {
			// Another handle with the same owner changed the count.
			r, err = m.release(ctx, r.Count)
		}
	}
	if err != nil {
		if final {
			// Renewal has stopped, so the lock ends within its lease anyway.
			m.endHold(renewal, redisync.ErrNotHeld, false)
			m.mu.Lock()
			m.released = true
			m.mu.Unlock()
		}
		return err
	}
	if !r.Acted {
		// Our field is gone: the lease ran out or the key was deleted.
		m.e.Watchdog.Remove(renewal)
		m.endHold(renewal, redisync.ErrLockLost, false)
		return redisync.ErrLockLost
	}
	m.mu.Lock()
	m.holds = r.Count
	m.mu.Unlock()
	if r.Count == 0 {
		m.endHold(renewal, redisync.ErrNotHeld, false)
	} else if final {
		m.e.Watchdog.Add(renewal, sent) // shared owner still holds: keep renewing
	}
	return nil
}

// unlockLost handles an Unlock that raced with the loss of the hold.
func (m *Mutex) unlockLost(ctx context.Context) error {
	if _, err := m.release(ctx, scripts.ReleaseAll); err == nil {
		m.mu.Lock()
		m.lost = false
		m.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Token returns the fencing token of the current hold, 0 if none. Tokens of
// one name strictly increase from one grant to the next.
func (m *Mutex) Token() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token
}

// Done returns a channel that is closed when the current hold ends: released
// by its last Unlock, or lost. Without a hold it returns a closed channel.
func (m *Mutex) Done() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.done
}

// Err returns nil while the handle holds the lock, an error matching
// redisync.ErrLockLost after a loss, and redisync.ErrNotHeld otherwise.
func (m *Mutex) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

func (m *Mutex) check(ctx context.Context) error {
	if ctx == nil {
		panic("rlock: nil Context")
	}
	if m.nameErr != nil {
		return m.nameErr
	}
	if m.e.IsClosed() {
		return redisync.ErrClosed
	}
	return ctx.Err()
}

// attempt is one acquisition round trip; see engine.Attempt.
func (m *Mutex) attempt(ctx context.Context) (bool, time.Duration, error) {
	m.op.Lock()
	defer m.op.Unlock()
	if m.e.IsClosed() {
		return false, 0, redisync.ErrClosed
	}
	m.mu.Lock()
	before := m.holds
	m.mu.Unlock()
	if before > 0 && m.nonReentrant {
		return false, 0, redisync.ErrNonReentrant
	}
	// The acquire is not cancelled with ctx: a command abandoned in flight
	// may still run after a compensating release sent on another connection,
	// and leave an orphan hold. Waiting for its reply (one round trip) tells
	// us exactly what to undo.
	actx, cancel := ctx, context.CancelFunc(nil)
	if ctx.Done() != nil {
		actx, cancel = context.WithTimeout(context.WithoutCancel(ctx), engine.CompensateTimeout)
		defer cancel()
	}
	sent := time.Now()
	res, err := scripts.LockAcquire(actx, m.e.RC, &m.keys, m.leaseMs, m.owner, m.nonReentrant)
	if err != nil {
		if errors.Is(err, scripts.ErrNonReentrant) {
			return false, 0, redisync.ErrNonReentrant
		}
		if _, ok := rueidis.IsRedisErr(err); !ok {
			// No reply: the script may have run. Undo a grant we cannot see;
			// if even that fails, the hold has no renewal and expires.
			m.compensate(ctx, before)
		}
		if ctx.Err() != nil {
			return false, 0, ctx.Err()
		}
		return false, 0, err
	}
	if !res.OK {
		if ctx.Err() != nil {
			return false, 0, ctx.Err()
		}
		return false, time.Duration(res.PTTL) * time.Millisecond, nil
	}
	if ctx.Err() != nil {
		// Granted, but the caller has gone: give it back.
		m.compensate(ctx, before)
		return false, 0, ctx.Err()
	}
	if err := m.granted(res, sent); err != nil {
		m.compensate(ctx, before)
		return false, 0, err
	}
	return true, 0, nil
}

// granted records a successful acquisition.
func (m *Mutex) granted(res scripts.Acquired, sent time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holds = res.Count
	if m.renewal != nil { // re-entered: the lease was extended
		m.e.Watchdog.Confirm(m.renewal, sent)
		return nil
	}
	l := &watchdog.Lease{
		TTL:     m.lease,
		Renewer: m.e.LockRenewer,
		Fixed:   m.fixed,
		Target: &engine.RenewTarget{
			Item:    scripts.RenewItem{Key: m.name, Owner: m.owner, Token: res.Token},
			LeaseMs: m.leaseMs,
		},
	}
	l.OnLost = func(err error) { m.onLost(l, err) }
	if m.fixed {
		l.Renewer = nil
	}
	if err := m.e.Watchdog.Add(l, sent); err != nil {
		m.holds = 0
		return redisync.ErrClosed
	}
	m.renewal, m.token, m.err, m.lost, m.released = l, res.Token, nil, false, false
	m.done = make(chan struct{})
	return nil
}

// compensate undoes a grant whose reply we did not see: the owner's count is
// either before (nothing happened) or before+1, and the release acts only in
// the second case.
func (m *Mutex) compensate(ctx context.Context, before int64) {
	bctx, cancel := engine.Background(ctx)
	defer cancel()
	r, err := m.release(bctx, before+1)
	if err != nil || !r.Acted {
		return
	}
	m.mu.Lock()
	m.holds = r.Count
	m.mu.Unlock()
}

// onLost is the watchdog's callback for hold l.
func (m *Mutex) onLost(l *watchdog.Lease, cause error) {
	err := redisync.ErrLockLost
	if !errors.Is(cause, watchdog.ErrLost) {
		err = cause // the Client was closed: matches ErrLockLost and ErrClosed
	}
	m.endHold(l, err, true)
}

// endHold ends hold l (if it is still current) with the given reason.
func (m *Mutex) endHold(l *watchdog.Lease, reason error, lost bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.renewal != l || l == nil {
		return
	}
	m.renewal, m.holds, m.token, m.err, m.lost = nil, 0, 0, reason, lost
	close(m.done)
}

func (m *Mutex) release(ctx context.Context, expected int64) (scripts.Released, error) {
	return scripts.LockRelease(ctx, m.e.RC, &m.keys, m.owner, m.leaseMs, expected, m.e.Publish)
}

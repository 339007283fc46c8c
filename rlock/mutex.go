package rlock

import (
	"context"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/lockopt"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/internal/scripts"
)

// MaxNameLength is the longest lock name accepted, in bytes. The name is
// sent with every command and is part of every wake-up channel.
const MaxNameLength = 4096

// MaxOwnerLength is the longest owner id WithOwner accepts, in bytes: an
// id is sent with every command and is a field of the lock's hash.
const MaxOwnerLength = 4096

// Mutex is a distributed lock. Goroutines that share a Mutex exclude each
// other as they would around a sync.Mutex, unless the handle was made
// reentrant (see the package doc's Ownership section). All methods are safe
// for concurrent use.
type Mutex struct {
	e            *engine.Engine
	name         string
	nameErr      error // the name, the owner id or the lease cannot be used: every method returns it
	keys         scripts.LockKeys
	owner        string
	leaseMs      string
	nonReentrant bool
	gate         *hold.Gate // nil for a reentrant handle
	hold         *hold.Hold
	// try and acquire are m.attempt and m.acquire, made once: a Lock then
	// makes no closure.
	try     engine.Attempt
	acquire hold.AcquireFunc
}

// New returns a lock named name on c. It does no I/O.
//
// The lock is the Redis hash named exactly name (see the package doc for the
// layout). A name that cannot be used (empty, longer than MaxNameLength,
// or unusable on a Cluster) makes every method return ErrInvalidName
// without I/O, and so do an owner id WithOwner refuses (ErrInvalidOwner)
// and a WithLease below redisync.MinLease (ErrInvalidLease). New panics if
// c is nil or another option is out of range (both
// programming errors).
func New(c *redisync.Client, name string, opts ...Option) *Mutex {
	e := engine.FromClient(c)
	nameErr := lockopt.CheckName("rlock", e, name)
	var o lockopt.Options
	for _, opt := range opts {
		opt(&o)
	}
	o.Validate("rlock")
	if nameErr == nil {
		nameErr = o.CheckOwner("rlock", name)
	}
	if nameErr == nil {
		nameErr = o.LeaseErr("rlock", name) // a lease is often configuration: an error, not a panic
	}
	owner, lease, fixed := o.Resolve(e)
	channel, _ := keys.Derived(keys.LockChannelPrefix, name)
	token, _ := keys.Derived(keys.LockTokenPrefix, name)
	info, holder := e.HolderInfo(name)
	m := &Mutex{
		e: e, name: name, nameErr: nameErr, owner: owner, nonReentrant: o.NonReentrant,
		leaseMs: engine.Millis(lease),
		keys:    scripts.LockKeys{Lock: name, Channel: channel, Token: token, Info: info, Holder: holder},
	}
	if o.Gated() {
		m.gate = hold.NewGate(o.NonReentrant, e.Closed())
	}
	m.hold = hold.New(hold.Config{
		Engine:       e,
		Lease:        lease,
		Fixed:        fixed,
		NonReentrant: o.NonReentrant,
		Shared:       o.Owner != "", // WithOwner: other handles may hold as this owner
		Latched:      true,
		Release:      m.release,
		Renewer:      e.LockRenewer,
		Observed:     obs.Target{Primitive: "rlock", Name: name},
		RenewTarget: func(token uint64) any {
			return &engine.RenewTarget{
				Item:    scripts.RenewItem{Key: name, Owner: m.owner, Token: token, Info: m.keys.Info},
				LeaseMs: m.leaseMs,
			}
		},
	})
	m.try, m.acquire = m.attempt, m.acquireLatched
	return m
}

func init() {
	hold.RegisterMember(func(l any) (*hold.Member, bool) {
		m, ok := l.(*Mutex)
		if !ok {
			return nil, false
		}
		return &hold.Member{
			Engine: m.e,
			Hold:   m.hold,
			Request: scripts.LockRequest{
				Keys: &m.keys, LeaseMs: m.leaseMs, Owner: m.owner, NonReentrant: m.nonReentrant,
			},
			Gate: m.gate,
		}, true
	})
	lockopt.RegisterRefusal(func(l any) (error, bool) {
		m, ok := l.(*Mutex)
		if !ok {
			return nil, false
		}
		return m.nameErr, true
	})
}

func (m *Mutex) observed() obs.Target { return obs.Target{Primitive: "rlock", Name: m.name} }

// Name returns the lock's name (the key of its hash).
func (m *Mutex) Name() string { return m.name }

// Owner returns the owner id this handle locks as.
func (m *Mutex) Owner() string { return m.owner }

// Lock blocks until the lock is held by this handle or ctx ends. On a handle
// that is already held it waits for that hold's Unlock, as sync.Mutex.Lock
// does (WithNonReentrant: returns redisync.ErrNonReentrant at once); on a
// reentrant handle (WithReentrant, WithOwner) it nests: each Lock needs its
// own Unlock, and the hold keeps its token.
//
// It returns nil, ctx.Err() unwrapped when ctx ends (within
// redisync.UndoWait of its end; nothing is left held, see the package doc),
// redisync.ErrClosed, redisync.ErrNonReentrant, or an error from Redis.
// Lock panics on a nil ctx.
func (m *Mutex) Lock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	if err := m.gate.Enter(ctx); err != nil {
		return err
	}
	err := m.e.Acquire(ctx, m.keys.Channel, m.observed(), m.try)
	m.gate.Acquired(err == nil)
	return err
}

// TryLock makes exactly one attempt: (true, nil) when the handle now holds
// the lock, (false, nil) when another owner holds it or, without I/O, when
// this (non-reentrant) handle is held or being locked by another goroutine.
// Errors are as Lock's.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	if ok, err := m.gate.TryEnter(); !ok {
		return false, err
	}
	ok, err := m.e.TryOnce(ctx, m.observed(), m.try)
	m.gate.Acquired(ok && err == nil)
	return ok, err
}

// Unlock releases one hold of this handle. After the last one the lock is
// free and one waiter is woken.
//
// The hold ends here at once and the release is sent whatever ctx says
// (see the package doc's Unlock section): ctx bounds only the wait for the
// reply. When ctx is done first Unlock returns ctx.Err(); the release
// completes in the background and Client.Close waits for it (for at most
// redisync.CloseTimeout: a release it gives up expires with its lease).
// Otherwise it
// returns nil, redisync.ErrNotHeld when this owner holds no lock,
// redisync.ErrLockLost when the hold was lost (Unlock then removes whatever
// is left of it), or an error from Redis: then the release stays queued and
// is sent again, as the same request, before the handle's next operation
// (calling Unlock again waits for it, and never releases twice).
// Unlock panics on a nil ctx.
func (m *Mutex) Unlock(ctx context.Context) error {
	// An ended ctx does not stop the release: it only bounds the wait; nor
	// does Close, when the handle still owes one.
	if err := m.check(ctx); err != nil && err != ctx.Err() && (err != redisync.ErrClosed || !m.hold.Owes()) {
		return err
	}
	// Whatever the release reports, the hold has ended here: let the next
	// goroutine sharing the handle in.
	defer m.gate.Exit()
	return m.hold.Unlock(ctx)
}

// Token returns the fencing token of the current hold, 0 if none. Tokens of
// one name strictly increase from one grant to the next.
func (m *Mutex) Token() uint64 { return m.hold.Token() }

// Done returns a channel that is closed when the current hold ends: released
// by its last Unlock, or lost. Without a hold it returns a closed channel.
func (m *Mutex) Done() <-chan struct{} { return m.hold.Done() }

// Err returns nil while the handle holds the lock, an error matching
// redisync.ErrLockLost after a loss, and redisync.ErrNotHeld otherwise.
func (m *Mutex) Err() error { return m.hold.Err() }

func (m *Mutex) check(ctx context.Context) error {
	return lockopt.Check("rlock", m.e, m.nameErr, ctx)
}

// attempt is one acquisition round trip; see engine.Attempt.
func (m *Mutex) attempt(ctx context.Context) (bool, time.Duration, error) {
	return m.hold.Attempt(ctx, m.acquire)
}

func (m *Mutex) acquireLatched(ctx context.Context) (scripts.Acquired, error) {
	return scripts.LockAcquireLatched(ctx, m.e.RC, &m.keys, m.leaseMs, m.owner, m.nonReentrant, m.hold.Latch())
}

func (m *Mutex) release(ctx context.Context, a scripts.ReleaseArgs) (scripts.Released, error) {
	return scripts.LockReleaseWith(ctx, m.e.RC, &m.keys, m.owner, m.leaseMs, m.e.Publish, a)
}

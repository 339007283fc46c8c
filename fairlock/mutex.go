package fairlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/lockopt"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/internal/scripts"
)

// MaxNameLength is the longest lock name accepted, in bytes.
const MaxNameLength = 4096

// MaxOwnerLength is the longest owner id WithOwner accepts, in bytes: an
// id is sent with every command, is a field of the lock's hash and an
// entry of its queue, and is part of its waiter's wake-up channel.
const MaxOwnerLength = 4096

// Mutex is a fair distributed lock. Goroutines that share a Mutex exclude
// each other as they would around a sync.Mutex, unless the handle was made
// reentrant (see the package doc). All methods are safe for concurrent use.
type Mutex struct {
	e             *engine.Engine
	name          string
	nameErr       error // the name or the owner id cannot be used: every method returns it
	keys          scripts.FairKeys
	owner         string
	channel       string // this owner's wake-up channel
	leaseMs       string
	nonReentrant  bool
	waiterTimeout time.Duration
	waitMs        string
	gate          *hold.Gate // nil for a reentrant handle
	hold          *hold.Hold
	redissonWait  string // WithRedissonQueue: the thread wait time in ms; "": off
	// entryLife bounds how long a place in the queue outlives its waiter's
	// last attempt: the waiter timeout, or Redisson's wait plus the lease.
	entryLife time.Duration
	// queued is a waiting Lock's acquire, made once: an attempt then makes
	// no closure.
	queued hold.AcquireFunc
}

// New returns a fair lock named name on c. It does no I/O.
//
// The lock is the Redis hash named exactly name, plus a queue; see the
// package doc for the layout. A name that cannot be used (empty, longer
// than MaxNameLength, or unusable on a Cluster) makes every method return
// ErrInvalidName without I/O, and so do an owner id WithOwner refuses
// (ErrInvalidOwner) and a WithLease below redisync.MinLease
// (ErrInvalidLease). New panics if c is nil or another option is out of
// range.
func New(c *redisync.Client, name string, opts ...Option) *Mutex {
	e := engine.FromClient(c)
	nameErr := lockopt.CheckName("fairlock", e, name)
	var o lockopt.Options
	for _, opt := range opts {
		opt(&o)
	}
	o.Validate("fairlock")
	if nameErr == nil {
		nameErr = o.CheckOwner("fairlock", name)
	}
	if nameErr == nil {
		nameErr = o.LeaseErr("fairlock", name) // a lease is often configuration: an error, not a panic
	}
	owner, lease, fixed := o.Resolve(e)
	derive := func(prefix string) string { k, _ := keys.Derived(prefix, name); return k }
	info, holder := e.HolderInfo(name)
	m := &Mutex{
		e: e, name: name, nameErr: nameErr, owner: owner, nonReentrant: o.NonReentrant,
		leaseMs:       engine.Millis(lease),
		waiterTimeout: o.WaiterTimeout,
		waitMs:        engine.Millis(o.WaiterTimeout),
		entryLife:     o.WaiterTimeout,
		keys: scripts.FairKeys{
			Lock:       name,
			Queue:      derive(keys.FairQueuePrefix),
			Heartbeats: derive(keys.FairHeartbeatPrefix),
			Token:      derive(keys.LockTokenPrefix),
			Channel:    derive(keys.FairChannelPrefix),
			Info:       info,
			Holder:     holder,
		},
	}
	if o.RedissonQueue > 0 {
		// Redisson's RFairLock queue and channels (WithRedissonQueue), named
		// by Redisson's rule: on a Cluster a name whose Redisson names leave
		// its slot is refused.
		redissonName := func(prefix string) string { k, _ := keys.Derived(prefix, name); return k }
		m.keys.Queue = redissonName(keys.FairRedissonQueuePrefix)
		m.keys.Heartbeats = redissonName(keys.FairRedissonTimeoutPrefix)
		m.keys.Channel = redissonName(keys.LockChannelPrefix)
		m.redissonWait = engine.Millis(o.RedissonQueue)
		m.entryLife = o.RedissonQueue + lease
		if _, ok := keys.Derived(keys.LockChannelPrefix, name); !ok && e.Cluster && m.nameErr == nil {
			m.nameErr = fmt.Errorf("fairlock: name %q contains a brace but no hash tag, so Redisson's queue for it is in another Cluster slot: %w", name, redisync.ErrInvalidName)
		}
	}
	m.channel = m.keys.WaiterChannel(owner)
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
		Release: func(ctx context.Context, a scripts.ReleaseArgs) (scripts.Released, error) {
			if m.redissonWait != "" {
				return scripts.FairRedissonRelease(ctx, e.RC, &m.keys, owner, m.leaseMs, e.Publish, a)
			}
			return scripts.FairReleaseWith(ctx, e.RC, &m.keys, owner, m.leaseMs, e.Publish, a)
		},
		Renewer:  e.LockRenewer, // the lock itself has the rlock layout
		Observed: m.observed(),
		RenewTarget: func(token uint64) any {
			return &engine.RenewTarget{
				Item:    scripts.RenewItem{Key: name, Owner: owner, Token: token, Info: m.keys.Info},
				LeaseMs: m.leaseMs,
			}
		},
	})
	m.queued = m.acquire(m.waitMs)
	return m
}

// A multilock learns a handle's refusal before its first round.
func init() {
	lockopt.RegisterRefusal(func(l any) (error, bool) {
		m, ok := l.(*Mutex)
		if !ok {
			return nil, false
		}
		return m.nameErr, true
	})
}

func (m *Mutex) observed() obs.Target { return obs.Target{Primitive: "fairlock", Name: m.name} }

// Name returns the lock's name (the key of its hash).
func (m *Mutex) Name() string { return m.name }

// Owner returns the owner id this handle locks as.
func (m *Mutex) Owner() string { return m.owner }

// Lock joins the queue and blocks until this handle holds the lock or ctx
// ends. The lock is granted in the order in which waiters joined the queue.
// On a handle that is already held, Lock first waits for that hold's Unlock
// (as sync.Mutex.Lock does; WithNonReentrant: redisync.ErrNonReentrant at
// once) and only then queues; on a reentrant handle (WithReentrant,
// WithOwner) it nests at once without queueing.
//
// It returns nil, ctx.Err() unwrapped when ctx ends, redisync.ErrClosed,
// redisync.ErrNonReentrant, or an error from Redis. When ctx ends, Lock
// returns within redisync.UndoWait of its end, whatever the server does.
// When it returns an error the handle has left the queue and holds nothing
// new: a Lock whose last attempt is still in flight when ctx ends waits
// for its reply and then leaves (one round trip each). If the server does
// not answer within redisync.UndoWait, Lock returns and a Client task
// leaves the queue and gives back a grant, sending each again until the
// server answers, for as long as it can matter (the place lapses after the
// waiter timeout — WithRedissonQueue: its wait plus the lease — and a
// grant with its lease; Client.Close gives the task up); until then the
// lock may show held, or this owner queued.
// Lock panics on a nil ctx.
func (m *Mutex) Lock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	if err := m.gate.Enter(ctx); err != nil {
		return err
	}
	err := m.e.Acquire(hold.UndoAfter(ctx), m.channel, m.observed(), m.attemptQueued)
	if err != nil && err != redisync.ErrNonReentrant {
		// An attempt cut short by ctx may still be joining the queue in
		// Redis: leave after it (AfterOps waits for that for at most
		// redisync.UndoWait; a Client task finishes it if the server does
		// not answer by then, before the handle's next attempt).
		m.hold.AfterOps(func() { m.leave(ctx) })
	}
	// Only now may the next goroutine sharing the handle queue: the owner's
	// place has been left, so it cannot inherit this Lock's.
	m.gate.Acquired(err == nil)
	return err
}

// TryLock makes exactly one attempt and never joins the queue: (true, nil)
// when the lock was free with nobody queued (or this owner is first in the
// queue, or already holds it), (false, nil) otherwise — without I/O when
// this (non-reentrant) handle is held or being locked by another goroutine.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	if ok, err := m.gate.TryEnter(); !ok {
		return false, err
	}
	ok, err := m.e.TryOnce(ctx, m.observed(), func(ctx context.Context) (bool, time.Duration, error) {
		return m.hold.Attempt(ctx, m.acquire("0"))
	})
	m.gate.Acquired(ok && err == nil)
	return ok, err
}

// Unlock releases one hold of this handle. After the last one the lock is
// free and the first live waiter in the queue is woken (only that one).
// As rlock.Mutex.Unlock, it releases whatever ctx says (ctx bounds only the
// wait for the reply; ctx.Err() when it ends first, the release completing
// in the background), and its errors are the same: redisync.ErrNotHeld,
// redisync.ErrLockLost, or a Redis error after which calling Unlock again
// is safe.
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

// Token returns the fencing token of the current hold, 0 if none.
func (m *Mutex) Token() uint64 { return m.hold.Token() }

// Done returns a channel that is closed when the current hold ends.
func (m *Mutex) Done() <-chan struct{} { return m.hold.Done() }

// Err returns nil while held, an error matching redisync.ErrLockLost after a
// loss, and redisync.ErrNotHeld otherwise.
func (m *Mutex) Err() error { return m.hold.Err() }

func (m *Mutex) check(ctx context.Context) error {
	return lockopt.Check("fairlock", m.e, m.nameErr, ctx)
}

func (m *Mutex) acquire(waitMs string) hold.AcquireFunc {
	return func(ctx context.Context) (scripts.Acquired, error) {
		if m.redissonWait != "" {
			return scripts.FairRedissonAcquire(ctx, m.e.RC, &m.keys, m.leaseMs, m.owner, m.nonReentrant, waitMs != "0",
				m.redissonWait, m.e.Publish, m.hold.Latch())
		}
		return scripts.FairAcquireLatched(ctx, m.e.RC, &m.keys, m.leaseMs, m.owner, m.nonReentrant, waitMs, m.e.Publish, m.hold.Latch())
	}
}

// attemptQueued is one attempt of a waiting Lock: it joins the queue or
// keeps its place there. Every attempt is also the waiter's heartbeat, so the
// next one is due a third of the waiter timeout after this one was sent —
// not after its reply came: a slow round trip does not stretch the gap the
// server sees between two heartbeats.
func (m *Mutex) attemptQueued(ctx context.Context) (bool, time.Duration, error) {
	sent := time.Now()
	ok, hint, err := m.hold.Attempt(ctx, m.queued)
	if heartbeat := max(m.waiterTimeout/3-time.Since(sent), time.Millisecond); !ok && err == nil && (hint <= 0 || hint > heartbeat) {
		hint = heartbeat
	}
	return ok, hint, err
}

// leave takes this owner out of the queue after a failed or cancelled Lock.
// A leave the server does not answer is sent again (engine.Persist) until
// the place would have lapsed anyway; leaving is idempotent, and the one
// more send after the first answer takes out a place that an attempt on a
// dropped connection put back after the leave overtook it.
func (m *Mutex) leave(ctx context.Context) {
	m.e.Persist(ctx, time.Now().Add(m.entryLife), true, func(bctx context.Context) bool {
		var err error
		if m.redissonWait != "" {
			_, err = scripts.FairRedissonLeave(bctx, m.e.RC, &m.keys, m.owner, m.e.Publish, m.redissonWait)
		} else {
			_, err = scripts.QueueLeave(bctx, m.e.RC, m.keys.Queue, m.keys.Heartbeats, m.keys.Channel, m.owner, m.e.Publish)
		}
		return !engine.Resend(err)
	})
}

// Queue returns the owners waiting in the queue, first in line first
// (waiters whose heartbeat has lapsed are dropped at the next acquire or
// release, and may still be listed until then).
func (m *Mutex) Queue(ctx context.Context) ([]string, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	want := "zset"
	if m.redissonWait != "" { // Redisson's list
		want = "list"
	}
	// Type and members in one no-writes script, which Redis runs under out
	// of memory too (it refuses every command queued in a MULTI then): a
	// key of another type under the queue's name is the typed wrong-kind
	// error, not Redis's WRONGTYPE.
	typ, _, members, err := scripts.KeyRead(ctx, m.e.RC, m.keys.Queue, want)
	if err != nil {
		return nil, fmt.Errorf("fairlock %q: reading the queue: %w", m.name, err)
	}
	switch typ {
	case "none":
		return nil, nil
	case want:
		return members, nil
	default:
		return nil, fmt.Errorf("fairlock %q: reading the queue: %w", m.name, &errs.WrongKindError{Key: m.keys.Queue, Found: "a " + typ})
	}
}

// HoldCount returns how many holds this handle's owner has in Redis.
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	st, err := m.read(ctx, false) // inspect.go
	return st.Count(m.owner), err
}

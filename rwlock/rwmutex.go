package rwlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/lockopt"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/internal/scripts"
)

// MaxNameLength is the longest lock name accepted, in bytes.
const MaxNameLength = 4096

// MaxOwnerLength is the longest owner id WithOwner accepts, in bytes: an
// id is sent with every command, names the lock hash's read and write
// fields, and is part of every read hold's key.
const MaxOwnerLength = 4096

// ErrUpgrade is returned at once by Lock (and TryLock) when the handle's
// owner holds read holds but not the write hold: the write lock waits for
// every reader to leave, this one included, so waiting would never end.
// Release the read holds first. (The other way round is allowed: a writer
// may take read holds, and releasing the write hold then downgrades it.)
var ErrUpgrade = errors.New("rwlock: read-to-write upgrade would wait for itself: release the read holds first")

// RWMutex is a distributed read-write lock with a read side and a write
// side. Goroutines that share an RWMutex exclude each other as they would
// around a sync.RWMutex, unless the handle was made reentrant (see the
// package doc). All methods are safe for concurrent use.
type RWMutex struct {
	e             *engine.Engine
	name          string
	nameErr       error // the name or the owner id cannot be used: every method returns it
	keys          scripts.RWKeys
	leaseMs       string
	nonReentrant  bool
	preferWriters bool
	waiterTimeout time.Duration
	waitMs        string
	read, write   *hold.Hold
	rgate, wgate  *hold.Gate // nil for a reentrant handle
	// tryRead and readAcquire are rw.attemptRead and rw.acquireRead, made
	// once: an RLock makes no closure.
	tryRead     engine.Attempt
	readAcquire hold.AcquireFunc
}

// New returns a read-write lock named name on c. It does no I/O.
//
// The lock is the Redis hash named exactly name, in Redisson's
// RReadWriteLock layout (see the package doc). A name that cannot be used
// (empty, longer than MaxNameLength, or unusable on a Cluster) makes every
// method return ErrInvalidName without I/O, and so do an owner id
// WithOwner refuses (ErrInvalidOwner) and a WithLease below
// redisync.MinLease (ErrInvalidLease). New panics if c is nil or another
// option is out of range.
func New(c *redisync.Client, name string, opts ...Option) *RWMutex {
	e := engine.FromClient(c)
	nameErr := lockopt.CheckName("rwlock", e, name)
	var o lockopt.Options
	for _, opt := range opts {
		opt(&o)
	}
	o.Validate("rwlock")
	if nameErr == nil {
		nameErr = o.CheckOwner("rwlock", name)
	}
	if nameErr == nil {
		nameErr = o.LeaseErr("rwlock", name) // a lease is often configuration: an error, not a panic
	}
	owner, lease, fixed := o.Resolve(e)
	derive := func(prefix string) string { k, _ := keys.Derived(prefix, name); return k }
	base := keys.Tagged(name)
	info, holder := e.HolderInfo(name)
	rw := &RWMutex{
		e: e, name: name, nameErr: nameErr, nonReentrant: o.NonReentrant,
		leaseMs:       engine.Millis(lease),
		preferWriters: o.WriterPreference,
		waiterTimeout: o.WaiterTimeout,
		waitMs:        engine.Millis(o.WaiterTimeout),
		keys: scripts.RWKeys{
			Lock:        name,
			Channel:     derive(keys.RWChannelPrefix),
			Token:       derive(keys.LockTokenPrefix),
			Phase:       derive(keys.RWTokenPrefix),
			Writers:     derive(keys.RWWritersPrefix),
			TimeoutBase: base,
			Timeouts:    base + ":" + owner + ":rwlock_timeout",
			Owner:       owner,
			WriteField:  owner + ":write",
			Info:        info,
			Holder:      holder,
		},
	}
	side := func(kind string, release hold.ReleaseFunc, item scripts.RenewItem) *hold.Hold {
		return hold.New(hold.Config{
			Engine: e, Lease: lease, Fixed: fixed, NonReentrant: o.NonReentrant,
			// WithOwner: other handles may hold as this owner. The rwlock
			// scripts keep no latch (Redisson's RReadWriteLock counts the
			// hash's fields), so a shared owner's release is ReleaseAny,
			// guarded by the hold's token against the lock's phase.
			Shared:   o.Owner != "",
			Release:  release,
			Renewer:  e.RWLockRenewer,
			Observed: obs.Target{Primitive: kind, Name: name},
			RenewTarget: func(token uint64) any {
				it := item
				it.Token = token
				return &engine.RenewTarget{Item: it, LeaseMs: rw.leaseMs}
			},
		})
	}
	rw.read = side("rwlock.read", func(ctx context.Context, a scripts.ReleaseArgs) (scripts.Released, error) {
		return scripts.RWReadRelease(ctx, e.RC, &rw.keys, rw.leaseMs, a, e.Publish)
	}, scripts.RenewItem{Key: name, Owner: owner, TokenSuffix: " r", Prefix: rw.keys.Timeouts + ":1", Phase: rw.keys.Phase, Info: info})
	rw.write = side("rwlock.write", func(ctx context.Context, a scripts.ReleaseArgs) (scripts.Released, error) {
		return scripts.RWWriteRelease(ctx, e.RC, &rw.keys, rw.leaseMs, a, e.Publish)
	}, scripts.RenewItem{Key: name, Owner: rw.keys.WriteField, TokenSuffix: " w " + rw.keys.WriteField, Phase: rw.keys.Phase, Info: info})
	if o.Gated() {
		rw.wgate, rw.rgate = hold.NewRWGate(o.NonReentrant, e.Closed())
	}
	rw.tryRead, rw.readAcquire = rw.attemptRead, rw.acquireRead
	return rw
}

// A multilock learns a handle's refusal, either side's, before its first
// round.
func init() {
	lockopt.RegisterRefusal(func(l any) (error, bool) {
		switch l := l.(type) {
		case *RWMutex:
			return l.nameErr, true
		case writeSide:
			return l.rw.nameErr, true
		case readSide:
			return l.rw.nameErr, true
		}
		return nil, false
	})
}

func (rw *RWMutex) observed(side string) obs.Target {
	return obs.Target{Primitive: side, Name: rw.name}
}

// Name returns the lock's name (the key of its hash).
func (rw *RWMutex) Name() string { return rw.name }

// Owner returns the owner id this handle locks as (its read field; the write
// field is Owner()+":write").
func (rw *RWMutex) Owner() string { return rw.keys.Owner }

// Lock blocks until this handle holds the write lock or ctx ends. The write
// lock excludes every reader and every other writer. While this handle reads
// or writes, Lock first waits for those holds to be released, as
// sync.RWMutex.Lock does (WithNonReentrant: redisync.ErrNonReentrant at
// once). On a reentrant handle it nests when the handle already holds the
// write lock, and returns ErrUpgrade at once when the handle holds read
// holds but not the write hold. Otherwise errors are as rlock.Mutex.Lock's
// (a Lock whose ctx ends returns within redisync.UndoWait of its end).
// Under writer preference, a Lock that fails has withdrawn its claim before
// it returns; when its last attempt is still in flight as ctx ends, that
// waits for the attempt's reply (one round trip) — for at most UndoWait:
// past it a Client task withdraws the claim, and until then readers may
// wait behind it. Lock panics on a nil ctx.
func (rw *RWMutex) Lock(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	if err := rw.wgate.Enter(ctx); err != nil {
		return err
	}
	err := rw.lock(ctx)
	rw.wgate.Acquired(err == nil)
	return err
}

func (rw *RWMutex) lock(ctx context.Context) error {
	if err := rw.upgradeCheck(ctx); err != nil {
		return err
	}
	actx := ctx
	if rw.preferWriters {
		actx = hold.UndoAfter(ctx) // the claim's withdrawal below waits for both
	}
	err := rw.e.Acquire(actx, rw.keys.Channel, rw.observed("rwlock.write"), rw.attemptWrite(true))
	if err != nil && rw.preferWriters {
		// An attempt cut short by ctx may still be registering the claim in
		// Redis: withdraw after it (AfterOps waits for at most
		// redisync.UndoWait; a Client task finishes it otherwise).
		// Withdrawing first would leave the claim holding readers back for
		// a whole waiter timeout.
		rw.write.AfterOps(func() { rw.leave(ctx) })
	}
	return err
}

// TryLock makes exactly one attempt at the write lock: (false, nil) when it
// is busy — without I/O when this (non-reentrant) handle reads or writes.
// It never registers as a waiting writer.
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) {
	if err := rw.check(ctx); err != nil {
		return false, err
	}
	if ok, err := rw.wgate.TryEnter(); !ok {
		return false, err
	}
	ok, err := rw.tryLock(ctx)
	rw.wgate.Acquired(ok && err == nil)
	return ok, err
}

func (rw *RWMutex) tryLock(ctx context.Context) (bool, error) {
	if err := rw.upgradeCheck(ctx); err != nil {
		return false, err
	}
	return rw.e.TryOnce(ctx, rw.observed("rwlock.write"), rw.attemptWrite(false))
}

// Unlock releases one write hold. After the last one, the lock is free — or,
// if the handle still holds read holds, downgraded to a read lock — and every
// waiter is woken. As rlock.Mutex.Unlock, it releases whatever ctx says (ctx
// bounds only the wait for the reply), and its errors are the same.
func (rw *RWMutex) Unlock(ctx context.Context) error {
	// An ended ctx does not stop the release: it only bounds the wait; nor
	// does Close, when the handle still owes one.
	if err := rw.check(ctx); err != nil && err != ctx.Err() && (err != redisync.ErrClosed || !rw.write.Owes()) {
		return err
	}
	defer rw.wgate.Exit() // the write hold has ended here, whatever the release reports
	return rw.write.Unlock(ctx)
}

// RLock blocks until this handle holds a read hold or ctx ends. Readers
// share the lock; a read waits while another owner holds the write lock (and,
// under writer preference, while a writer waits, unless this handle already
// reads). Goroutines sharing the handle read together, each RLock adding one
// to the handle's read hold count; while the handle writes, or a Lock on it
// waits, RLock first waits for that, as sync.RWMutex.RLock does. On a
// reentrant handle the write holder may take read holds. Errors are as
// rlock.Mutex.Lock's. RLock panics on a nil ctx.
func (rw *RWMutex) RLock(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	if err := rw.rgate.Enter(ctx); err != nil {
		return err
	}
	err := rw.e.Acquire(ctx, rw.keys.Channel, rw.observed("rwlock.read"), rw.tryRead)
	rw.rgate.Acquired(err == nil)
	return err
}

// TryRLock makes exactly one attempt at a read hold: (false, nil) when busy
// — without I/O when this (non-reentrant) handle writes.
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) {
	if err := rw.check(ctx); err != nil {
		return false, err
	}
	if ok, err := rw.rgate.TryEnter(); !ok {
		return false, err
	}
	ok, err := rw.e.TryOnce(ctx, rw.observed("rwlock.read"), rw.tryRead)
	rw.rgate.Acquired(ok && err == nil)
	return ok, err
}

// RUnlock releases one read hold. When no live read hold and no writer is
// left, the lock is free and every waiter is woken. As rlock.Mutex.Unlock,
// it releases whatever ctx says, and its errors are the same.
func (rw *RWMutex) RUnlock(ctx context.Context) error {
	// An ended ctx does not stop the release: it only bounds the wait; nor
	// does Close, when the handle still owes one.
	if err := rw.check(ctx); err != nil && err != ctx.Err() && (err != redisync.ErrClosed || !rw.read.Owes()) {
		return err
	}
	defer rw.rgate.Exit() // one read hold has ended here, whatever the release reports
	return rw.read.Unlock(ctx)
}

// WriteLocker returns the write side as a redisync.Locker (for multilock
// and redisync.Do): Lock, TryLock and Unlock as above, and the write hold's
// Token, Done and Err.
func (rw *RWMutex) WriteLocker() redisync.Locker { return writeSide{rw} }

// ReadLocker returns the read side as a redisync.Locker: RLock, TryRLock and
// RUnlock, and the read holds' Token (see the package doc), Done and Err.
func (rw *RWMutex) ReadLocker() redisync.Locker { return readSide{rw} }

func (rw *RWMutex) check(ctx context.Context) error {
	return lockopt.Check("rwlock", rw.e, rw.nameErr, ctx)
}

// upgradeCheck refuses, without I/O, a write Lock by a handle that only
// reads. (The script refuses it too, for owners shared by several handles.)
// It first lets a cancelled read acquire finish its undo: until then the
// owner's read field may still be there.
func (rw *RWMutex) upgradeCheck(ctx context.Context) error {
	if err := rw.read.Quiesce(ctx); err != nil {
		return err
	}
	if rw.read.Count() > 0 && rw.write.Count() == 0 {
		return rw.upgradeErr()
	}
	return nil
}

// upgradeErr is ErrUpgrade naming the lock (errors.Is still matches).
func (rw *RWMutex) upgradeErr() error { return fmt.Errorf("rwlock %q: %w", rw.name, ErrUpgrade) }

func (rw *RWMutex) attemptRead(ctx context.Context) (bool, time.Duration, error) {
	// A cancelled write acquire's undo finishes first.
	if err := rw.write.Quiesce(ctx); err != nil {
		return false, 0, err
	}
	return rw.read.Attempt(ctx, rw.readAcquire)
}

func (rw *RWMutex) acquireRead(ctx context.Context) (scripts.Acquired, error) {
	return scripts.RWReadAcquire(ctx, rw.e.RC, &rw.keys, rw.leaseMs, rw.nonReentrant)
}

// attemptWrite returns one write attempt; a waiting writer with writer
// preference registers its claim, and heartbeats it with every attempt.
func (rw *RWMutex) attemptWrite(waiting bool) func(context.Context) (bool, time.Duration, error) {
	waitMs := "0"
	claim := waiting && rw.preferWriters
	if claim {
		waitMs = rw.waitMs
	}
	return func(ctx context.Context) (bool, time.Duration, error) {
		ok, hint, err := rw.write.Attempt(ctx, func(ctx context.Context) (scripts.Acquired, error) {
			return scripts.RWWriteAcquire(ctx, rw.e.RC, &rw.keys, rw.leaseMs, rw.nonReentrant, waitMs)
		})
		if errors.Is(err, scripts.ErrUpgrade) {
			return false, 0, rw.upgradeErr()
		}
		if heartbeat := rw.waiterTimeout / 3; claim && !ok && err == nil && (hint <= 0 || hint > heartbeat) {
			hint = heartbeat
		}
		return ok, hint, err
	}
}

// leave withdraws a waiting writer's claim after a failed or cancelled
// Lock. A withdrawal the server does not answer is sent again
// (engine.Persist) until the claim would have lapsed anyway (the waiter
// timeout); withdrawing is idempotent, and the one more send after the
// first answer withdraws a claim that an attempt on a dropped connection
// made after the withdrawal overtook it.
func (rw *RWMutex) leave(ctx context.Context) {
	rw.e.Persist(ctx, time.Now().Add(rw.waiterTimeout), true, func(bctx context.Context) bool {
		_, err := scripts.RWLeave(bctx, rw.e.RC, &rw.keys, rw.e.Publish)
		return !engine.Resend(err)
	})
}

type writeSide struct{ rw *RWMutex }

func (s writeSide) Lock(ctx context.Context) error            { return s.rw.Lock(ctx) }
func (s writeSide) TryLock(ctx context.Context) (bool, error) { return s.rw.TryLock(ctx) }
func (s writeSide) Unlock(ctx context.Context) error          { return s.rw.Unlock(ctx) }
func (s writeSide) Token() uint64                             { return s.rw.write.Token() }
func (s writeSide) Done() <-chan struct{}                     { return s.rw.write.Done() }
func (s writeSide) Err() error                                { return s.rw.write.Err() }

type readSide struct{ rw *RWMutex }

func (s readSide) Lock(ctx context.Context) error            { return s.rw.RLock(ctx) }
func (s readSide) TryLock(ctx context.Context) (bool, error) { return s.rw.TryRLock(ctx) }
func (s readSide) Unlock(ctx context.Context) error          { return s.rw.RUnlock(ctx) }
func (s readSide) Token() uint64                             { return s.rw.read.Token() }
func (s readSide) Done() <-chan struct{}                     { return s.rw.read.Done() }
func (s readSide) Err() error                                { return s.rw.read.Err() }

// Name returns the lock's name (used by multilock for its canonical order).
func (s writeSide) Name() string { return s.rw.name }

// Name returns the lock's name (used by multilock for its canonical order).
func (s readSide) Name() string { return s.rw.name }

package hold

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/internal/scripts"
	"github.com/redisync/redisync/internal/watchdog"
)

// AcquireFunc runs a primitive's acquire script once. A primitive whose
// scripts keep latches (Config.Latched) passes Hold.Latch() to the script.
type AcquireFunc func(ctx context.Context) (scripts.Acquired, error)

// ReleaseFunc runs a primitive's release script once.
type ReleaseFunc func(ctx context.Context, a scripts.ReleaseArgs) (scripts.Released, error)

// Config describes the lock a Hold runs on.
type Config struct {
	Engine       *engine.Engine
	Lease        time.Duration // the lease of each acquisition
	Fixed        bool          // no renewal: the hold ends at its lease
	NonReentrant bool
	// Shared is set when the owner id was given (WithOwner): other handles
	// or processes may hold under it too, so the owner's count in Redis is
	// not this handle's alone.
	Shared bool
	// Latched is set when the primitive's acquire and release scripts keep
	// latches (the lock layout); see the package doc. It matters only with
	// Shared.
	Latched bool
	// LocalCount is set when nested holds are counted here only: a
	// reentrant Lock on a held handle adds one without I/O, and only the
	// last Unlock sends a release (redlock, whose nodes keep no count).
	LocalCount bool
	Release    ReleaseFunc
	// Renewer renews the hold's lease; RenewTarget builds its watchdog
	// target for a hold with the given token.
	Renewer     watchdog.Renewer
	RenewTarget func(token uint64) any
	// Observed names the hold in Released and Lost events, and in errors.
	Observed obs.Target
	// OutlivesCtx is set when Release (or an acquire) may leave work that
	// goes on using its ctx after it returns — redlock's sends to nodes it
	// does not wait for, whose contexts derive from it. The contexts a Hold
	// runs its acquires and releases on are otherwise reused once they
	// return (engine.DetachUnwatched, engine.Settler): a context kept past
	// that would see another call's values.
	OutlivesCtx bool
	// UndoAfter is set when every acquire of the hold is made for a call
	// that, when it fails, undoes more with AfterOps: as a ctx marked with
	// UndoAfter, without a context per call.
	UndoAfter bool
	// Calls, when Release is nil, gives the hold's release, renewal target
	// and acquire as methods of one value (a semaphore's permit), which
	// costs no closure per hold; Attempt with a nil AcquireFunc uses its
	// Acquire.
	Calls Calls
}

// Calls is a primitive's scripts for one hold, as Config.Calls.
type Calls interface {
	Acquire(ctx context.Context) (scripts.Acquired, error)
	Release(ctx context.Context, a scripts.ReleaseArgs) (scripts.Released, error)
	RenewTarget(token uint64) any
}

// Hold is one handle's hold; all methods are safe for concurrent use.
type Hold struct {
	cfg   Config
	self  [1]*Hold            // this hold as AttemptAll's slice, without allocating one each time
	att   attempt             // the state of its attempts (under op; see attemptAll)
	grant [1]scripts.Acquired // Attempt's grant as attemptAll's slice (under op, which the attempt and its undo hold)
	latch string              // this handle's latch field; "" when it has none

	// op serializes the handle's round trips (acquire, release, undo), so
	// that counts and latches are never stale and releases reach Redis in
	// order, before the next acquire.
	op  opLock
	seq uint64        // request ids (under op)
	cur scripts.Latch // the latch of the acquire in flight (under op)

	mu         sync.Mutex
	holds      int64           // this handle's holds: grants minus Unlocks
	remote     int64           // the owner's count in Redis as last seen
	token      uint64          // fencing token of the current hold
	done       chan struct{}   // closed when the current hold ends
	err        error           // nil while held; why the last hold ended otherwise
	renewal    *watchdog.Lease // the current hold's registration with the watchdog
	lost       bool            // the last hold was lost: Unlock cleans up and reports it
	ended      uint64          // token of the last hold that ended (what a cleanup may touch)
	endedHolds int64           // this handle's holds when it ended (what a shared owner's cleanup removes)
	since      time.Time       // when the current hold was acquired (sent)
	marked     bool            // a latched acquire of the hold granted: its latch field is in the hash
	queue      []*job          // releases not yet answered by Redis, in order
	queue0     [1]*job         // the queue's first array: one release costs no array
	// unreported are lost holds that a reentrant handle locked past before
	// their Unlock, innermost last: each one's Unlock, after those of the
	// holds locked on top of it, cleans it up and reports the loss.
	unreported []loss
}

// loss is a lost hold whose Unlock is still to come.
type loss struct {
	token uint64 // its fencing token (what its cleanup may touch)
	holds int64  // this handle's holds when it ended
	err   error  // what its Unlock reports
}

// Closed is a channel that is closed: the Done of a handle that holds
// nothing (every lock kind's, multilock's and semaphore's Locker's too).
var Closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// LatchPrefix starts the name of a handle's latch field in a lock hash.
const LatchPrefix = "redisync:latch:"

// New returns a Hold with no hold.
func New(cfg Config) *Hold {
	h := new(Hold)
	Init(h, cfg)
	return h
}

// Init makes h, a zero Hold that is part of a value of the primitive's
// (one allocation for both), a Hold with no hold; h must not be copied
// afterwards.
func Init(h *Hold, cfg Config) {
	h.cfg, h.op, h.done, h.err = cfg, newOpLock(), Closed, errs.ErrNotHeld
	h.queue = h.queue0[:0]
	h.self = [1]*Hold{h}
	h.att.settler.Init(&h.att, !cfg.OutlivesCtx)
	if cfg.Shared && cfg.Latched {
		h.latch = LatchPrefix + cfg.Engine.NewOwner()
	}
}

// release runs the release script once (Config.Release, or Calls').
func (h *Hold) release(ctx context.Context, a scripts.ReleaseArgs) (scripts.Released, error) {
	if h.cfg.Release == nil {
		return h.cfg.Calls.Release(ctx, a)
	}
	return h.cfg.Release(ctx, a)
}

// renewTarget builds the watchdog target of a hold with token
// (Config.RenewTarget, or Calls').
func (h *Hold) renewTarget(token uint64) any {
	if h.cfg.RenewTarget == nil {
		return h.cfg.Calls.RenewTarget(token)
	}
	return h.cfg.RenewTarget(token)
}

// Latch is the latch to pass to the acquire script now running (the zero
// Latch when the handle has none). Only an AcquireFunc may call it.
func (h *Hold) Latch() scripts.Latch { return h.cur }

// nextLatch draws the latch of a new request (under op).
func (h *Hold) nextLatch() scripts.Latch {
	if h.latch == "" {
		return scripts.Latch{}
	}
	h.seq++
	return scripts.Latch{Field: h.latch, Req: strconv.FormatUint(h.seq, 36)}
}

// Quiesce waits until no operation of this hold is in progress, including
// the undo of a cancelled acquire that a Client task is finishing (a
// handle's other hold, such as rwlock's other side, may depend on it), or
// until ctx ends (then ctx.Err()).
func (h *Hold) Quiesce(ctx context.Context) error {
	if err := h.op.LockCtx(ctx); err != nil {
		return err
	}
	h.op.Unlock()
	return nil
}

// AfterOps runs f once no operation of this hold is in progress, in a
// Client task (at once when none is, otherwise after the one in progress:
// the undo of an acquire whose caller has gone), and before the handle's
// next operation. It waits for f for at most engine.UndoWait: a cancelled
// call that undoes with it returns with its undo landed unless the server
// does not answer within that bound. A semaphore's Acquire takes its
// request out of the queue this way, so an acquire still in flight cannot
// put it back afterwards.
func (h *Hold) AfterOps(f func()) {
	locked := h.op.TryLock()
	done := make(chan struct{})
	h.cfg.Engine.Go(func() {
		defer close(done)
		if !locked {
			h.op.Lock()
		}
		defer h.op.Unlock()
		f()
	})
	t := time.NewTimer(engine.UndoWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// UndoAfter marks the ctx of a call that, when it fails, undoes more with
// AfterOps (a waiter leaving its queue): its attempts leave the wait for
// their own undo to AfterOps, which runs after it, so that the call waits
// once, for both, within engine.UndoWait.
func UndoAfter(ctx context.Context) context.Context {
	return context.WithValue(ctx, undoAfterKey{}, true)
}

type undoAfterKey struct{}

// awaitUndo waits until no operation of holds is in progress — the undo
// that a Client task runs for an attempt whose caller has gone — for at
// most engine.UndoWait, unless ctx or the hold says the caller waits for it
// later (UndoAfter, Config.UndoAfter).
func awaitUndo(ctx context.Context, holds []*Hold) {
	if len(holds) == 1 && holds[0].cfg.UndoAfter || ctx.Value(undoAfterKey{}) != nil {
		return
	}
	t := time.NewTimer(engine.UndoWait)
	defer t.Stop()
	for _, h := range holds {
		select {
		case h.op <- struct{}{}:
			h.op.Unlock()
		case <-t.C:
			return
		}
	}
}

// Count is the hold count as this handle last saw it in Redis.
func (h *Hold) Count() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holds
}

// Token is the fencing token of the current hold, 0 if none.
func (h *Hold) Token() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.token
}

// Done is closed when the current hold ends; closed when there is none.
func (h *Hold) Done() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.done
}

// Err is nil while held, matches ErrLockLost after a loss, and is
// ErrNotHeld otherwise.
func (h *Hold) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Owes reports whether Unlock has something to send: a hold, the remains of
// a lost one (a hold Close reported lost included), or releases still
// queued. A handle's Unlock after Close goes on when it owes: the release
// is bounded as always, and the hold does not wait out its lease.
func (h *Hold) Owes() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holds > 0 || h.lost || len(h.queue) > 0
}

// Lost implements watchdog.Notifier: the watchdog's report that hold l
// was lost.
func (h *Hold) Lost(l *watchdog.Lease, cause error) {
	err := errs.ErrLockLost
	if !errors.Is(cause, watchdog.ErrLost) {
		err = cause // the Client was closed: matches ErrLockLost and ErrClosed
	}
	h.end(l, err, true)
}

// end ends hold l (if it is still current) with the given reason.
func (h *Hold) end(l *watchdog.Lease, reason error, lost bool) {
	h.mu.Lock()
	e := h.endLocked(l, reason, lost)
	h.mu.Unlock()
	e.observe(h)
}

// endedHold is a hold that endLocked ended, for the event observe sends
// once mu is released.
type endedHold struct {
	ok     bool // a hold ended
	held   time.Duration
	reason error
}

// endLocked ends hold l (under mu) if it is still current, and returns
// what ended (ok false if nothing did).
func (h *Hold) endLocked(l *watchdog.Lease, reason error, lost bool) endedHold {
	if h.renewal != l || l == nil {
		return endedHold{}
	}
	h.ended, h.endedHolds = h.token, h.holds
	h.renewal, h.holds, h.token, h.err, h.lost = nil, 0, 0, reason, lost
	close(h.done)
	return endedHold{ok: true, held: time.Since(h.since), reason: reason}
}

// observe reports the end of a hold (nothing when none ended).
func (e endedHold) observe(h *Hold) {
	if e.ok {
		h.cfg.Engine.Observe(Ended(h.cfg.Observed, e.held, e.reason))
	}
}

// Ended is the event for a hold of target that lasted held and ended for
// reason: Released after a release (reason ErrNotHeld), Lost otherwise.
func Ended(target obs.Target, held time.Duration, reason error) obs.Event {
	ev := obs.Event{Kind: obs.Lost, Primitive: target.Primitive, Name: target.Name, Held: held, Err: reason}
	if errors.Is(reason, errs.ErrNotHeld) {
		ev.Kind, ev.Err = obs.Released, nil
	}
	return ev
}

// LostReason is what a hold found lost by a failed watchdog.Remove reports:
// ErrLockLost, joined with ErrClosed when the Client was closed.
func LostReason(e *engine.Engine) error {
	if e.IsClosed() {
		return errs.LostOnClose
	}
	return errs.ErrLockLost
}

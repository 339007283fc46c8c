// Package hold is the reentrant hold of one owner on one lock: the state
// machine every lock handle shares (rlock, fairlock, both sides of rwlock).
//
// A Hold knows the owner's hold count as last seen in Redis, the fencing
// token, the Done channel and the watchdog registration of the current hold.
// It runs a primitive's acquire script through Attempt and its release
// script through Unlock, and makes both safe against lost replies and
// cancellation:
//
//   - an acquire is never abandoned in flight (its reply, one round trip,
//     decides what to undo); a grant the caller no longer wants is undone
//     with an owner-checked release that acts only on the count it created;
//   - a release names the count it expects to find, so a repeated release
//     never decrements twice;
//   - a hold the watchdog reports lost closes Done, and the next Unlock
//     removes whatever is left of it and reports the loss.
package hold

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/scripts"
	"github.com/redisync/redisync/watchdog"
)

// AcquireFunc runs a primitive's acquire script once.
type AcquireFunc func(ctx context.Context) (scripts.Acquired, error)

// Config describes the lock a Hold runs on.
type Config struct {
	Engine       *engine.Engine
	Lease        time.Duration // the lease of each acquisition
	Fixed        bool          // no renewal: the hold ends at its lease
	NonReentrant bool
	// Release runs the release script with an expectation (a hold count,
	// scripts.ReleaseAny or scripts.ReleaseAll).
	Release func(ctx context.Context, expected int64) (scripts.Released, error)
	// Renewer renews the hold's lease; RenewTarget builds its watchdog
	// target for a hold with the given token.
	Renewer     watchdog.Renewer
	RenewTarget func(token uint64) any
	// Observed names the hold in Released and Lost events.
	Observed obs.Target
}

// Hold is one owner's reentrant hold; all methods are safe for concurrent use.
type Hold struct {
	cfg  Config
	self [1]*Hold // this hold as AttemptAll's slice, without allocating one each time

	// op serializes acquire and release round trips, so the hold count sent
	// as "expected" is never stale.
	op sync.Mutex

	mu       sync.Mutex
	holds    int64           // the owner's hold count in Redis, as last seen
	token    uint64          // fencing token of the current hold
	done     chan struct{}   // closed when the current hold ends
	err      error           // nil while held; why the last hold ended otherwise
	renewal  *watchdog.Lease // the current hold's registration with the watchdog
	lost     bool            // the last hold was lost: Unlock cleans up and reports it
	released bool            // a final release was sent and its reply lost
	since    time.Time       // when the current hold was acquired (sent)
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// New returns a Hold with no hold.
func New(cfg Config) *Hold {
	h := &Hold{cfg: cfg, done: closedChan, err: errs.ErrNotHeld}
	h.self = [1]*Hold{h}
	return h
}

// Attempt makes one acquisition with acquire, in the shape of engine.Attempt:
// whether it acquired, and when busy the wait hint from the script.
func (h *Hold) Attempt(ctx context.Context, acquire AcquireFunc) (bool, time.Duration, error) {
	return AttemptAll(ctx, h.self[:], func(ctx context.Context) ([]scripts.Acquired, scripts.Acquired, error) {
		res, err := acquire(ctx)
		if err != nil || !res.OK {
			return nil, res, err
		}
		return []scripts.Acquired{res}, scripts.Acquired{}, nil
	})
}

// AcquireAllFunc runs one script that acquires several holds, all or none:
// one result per hold when granted, or (nil, busy) with busy.PTTL the wait
// hint.
type AcquireAllFunc func(ctx context.Context) (granted []scripts.Acquired, busy scripts.Acquired, err error)

// AttemptAll makes one acquisition of several holds of one Client with a
// single script (a same-slot multilock), with Attempt's guarantees for every
// one of them. The holds must be passed in one canonical order (their op
// locks are taken in it).
func AttemptAll(ctx context.Context, holds []*Hold, acquire AcquireAllFunc) (bool, time.Duration, error) {
	for _, h := range holds {
		h.op.Lock()
	}
	a := &attempt{ctx: ctx, holds: holds}
	defer func() {
		if !a.handedOff {
			a.unlockOps()
		}
	}()
	e := holds[0].cfg.Engine
	if e.IsClosed() {
		return false, 0, errs.ErrClosed
	}
	a.before = a.one[:0]
	for _, h := range holds {
		h.mu.Lock()
		n := h.holds
		h.mu.Unlock()
		if n > 0 && h.cfg.NonReentrant {
			return false, 0, errs.ErrNonReentrant
		}
		a.before = append(a.before, n)
	}
	undoLater := func() { a.undoLater(e) }
	// The acquire is never abandoned in flight (see engine.Settle): its
	// reply tells exactly what to undo. If ctx ends first, Lock returns at
	// once and the Client's task awaits the reply, undoes a grant, and only
	// then frees the handle for its next operation.
	type outcome struct {
		res  []scripts.Acquired
		busy scripts.Acquired
		err  error
	}
	sent := time.Now()
	out, ok := engine.Settle(e, ctx, func(actx context.Context) outcome {
		res, busy, err := acquire(actx)
		return outcome{res, busy, err}
	}, func(out outcome) {
		defer a.unlockOps()
		if out.res != nil || (out.err != nil && !scripts.IsReply(out.err)) {
			a.undo() // granted, or no reply: the release acts only on what this acquire did
		}
	})
	if !ok {
		a.handedOff = true
		return false, 0, ctx.Err()
	}
	res, busy, err := out.res, out.busy, out.err
	if err != nil {
		if errors.Is(err, scripts.ErrNonReentrant) {
			return false, 0, errs.ErrNonReentrant
		}
		if !scripts.IsReply(err) {
			// No reply: the script may have run. Undo grants we cannot see;
			// if even that fails, the holds have no renewal and expire.
			undoLater()
		}
		if ctx.Err() != nil {
			return false, 0, ctx.Err()
		}
		return false, 0, err
	}
	if res == nil {
		if ctx.Err() != nil {
			return false, 0, ctx.Err()
		}
		return false, time.Duration(busy.PTTL) * time.Millisecond, nil
	}
	if ctx.Err() != nil {
		// Granted, but the caller has gone: give it back.
		undoLater()
		return false, 0, ctx.Err()
	}
	for i, h := range holds {
		if err := h.granted(res[i], sent); err != nil {
			undoLater()
			return false, 0, err
		}
	}
	return true, 0, nil
}

// attempt is the state of one AttemptAll call: the holds whose op locks it
// holds, and their counts before it (what an undo restores). One value
// instead of several closures keeps the hot path's allocations down.
type attempt struct {
	ctx       context.Context
	holds     []*Hold
	before    []int64
	one       [1]int64 // before's storage for the usual single hold
	handedOff bool     // a Client task unlocks the ops after the undo
}

func (a *attempt) unlockOps() {
	for _, h := range a.holds {
		h.op.Unlock()
	}
}

// undo gives back whatever the acquire granted (see compensate).
func (a *attempt) undo() {
	for i, h := range a.holds {
		h.compensate(a.ctx, a.before[i])
	}
}

// undoLater gives the undo to a Client task, which keeps the handle's
// operations waiting until it is done: the caller returns at once even when
// the network swallows the release's reply.
func (a *attempt) undoLater(e *engine.Engine) {
	a.handedOff = true
	e.Go(func() {
		defer a.unlockOps()
		a.undo()
	})
}

// granted records a successful acquisition.
func (h *Hold) granted(res scripts.Acquired, sent time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holds = res.Count
	w := h.cfg.Engine.Watchdog
	if h.renewal != nil { // re-entered: the lease was extended
		w.Confirm(h.renewal, sent)
		return nil
	}
	l := &watchdog.Lease{TTL: h.cfg.Lease, Fixed: h.cfg.Fixed, Target: h.cfg.RenewTarget(res.Token)}
	if !h.cfg.Fixed {
		l.Renewer = h.cfg.Renewer
	}
	l.OnLost = func(err error) { h.onLost(l, err) }
	if err := w.Add(l, sent); err != nil {
		h.holds = 0
		return errs.ErrClosed
	}
	h.renewal, h.token, h.err, h.lost, h.released = l, res.Token, nil, false, false
	h.done, h.since = make(chan struct{}), sent
	return nil
}

// compensate undoes a grant whose reply we did not see or no longer want:
// the owner's count is either before (nothing happened) or before+1, and
// the release acts only in the second case.
func (h *Hold) compensate(ctx context.Context, before int64) {
	bctx, cancel := engine.Background(ctx)
	defer cancel()
	r, err := h.cfg.Release(bctx, before+1)
	if err != nil || !r.Acted {
		return
	}
	h.mu.Lock()
	h.holds = r.Count
	h.mu.Unlock()
}

// Unlock releases one hold; see rlock.Mutex.Unlock for the contract.
func (h *Hold) Unlock(ctx context.Context) error {
	h.op.Lock()
	defer h.op.Unlock()

	h.mu.Lock()
	holds, lost, released, renewal := h.holds, h.lost, h.released, h.renewal
	h.mu.Unlock()

	switch {
	case holds == 0 && lost:
		return h.cleanUpLost(ctx)
	case holds == 0 && released:
		// The reply to the final release was lost: confirm it.
		r, err := h.cfg.Release(ctx, 1)
		if err != nil {
			return err
		}
		h.mu.Lock()
		h.released = false
		h.mu.Unlock()
		if r.Acted || r.Count == 0 {
			return nil
		}
		return errs.ErrNotHeld
	case holds == 0:
		// No hold on this handle: an owner resumed with WithOwner may still
		// hold one in Redis.
		r, err := h.cfg.Release(ctx, scripts.ReleaseAny)
		if err != nil {
			return err
		}
		if !r.Acted {
			return errs.ErrNotHeld
		}
		return nil
	}

	w := h.cfg.Engine.Watchdog
	final := holds == 1
	if final && !w.Remove(renewal) {
		// Lost while we were getting here. The watchdog's OnLost may not
		// have run yet: end the hold now (OnLost then finds it ended).
		h.end(renewal, LostReason(h.cfg.Engine), true)
		return h.cleanUpLost(ctx)
	}
	sent := time.Now()
	r, err := h.cfg.Release(ctx, holds)
	if err == nil && !r.Acted && r.Count > 0 {
		if r.Count == holds-1 {
			// An earlier call whose reply was lost already did it.
			r.Acted = true
		} else {
			// Another handle with the same owner changed the count.
			r, err = h.cfg.Release(ctx, r.Count)
		}
	}
	if err != nil {
		if final {
			// Renewal has stopped, so the lock ends within its lease anyway.
			h.end(renewal, errs.ErrNotHeld, false)
			h.mu.Lock()
			h.released = true
			h.mu.Unlock()
		}
		return err
	}
	if !r.Acted {
		// Our field is gone: the lease ran out or the key was deleted.
		w.Remove(renewal)
		h.end(renewal, errs.ErrLockLost, false)
		return errs.ErrLockLost
	}
	h.mu.Lock()
	h.holds = r.Count
	h.mu.Unlock()
	if r.Count == 0 {
		h.end(renewal, errs.ErrNotHeld, false)
	} else if final {
		w.Add(renewal, sent) // a shared owner still holds: keep renewing
	}
	return nil
}

// cleanUpLost removes whatever is left of a lost hold and reports the loss.
func (h *Hold) cleanUpLost(ctx context.Context) error {
	if _, err := h.cfg.Release(ctx, scripts.ReleaseAll); err == nil {
		h.mu.Lock()
		h.lost = false
		h.mu.Unlock()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Quiesce waits until no operation of this hold is in progress, including
// the undo of a cancelled acquire that a Client task is finishing (a
// handle's other hold, such as rwlock's other side, may depend on it).
func (h *Hold) Quiesce() {
	h.op.Lock()
	//lint:ignore SA2001 an empty critical section: waiting for the holder is the point
	h.op.Unlock()
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

// onLost is the watchdog's callback for hold l.
func (h *Hold) onLost(l *watchdog.Lease, cause error) {
	err := errs.ErrLockLost
	if !errors.Is(cause, watchdog.ErrLost) {
		err = cause // the Client was closed: matches ErrLockLost and ErrClosed
	}
	h.end(l, err, true)
}

// end ends hold l (if it is still current) with the given reason.
func (h *Hold) end(l *watchdog.Lease, reason error, lost bool) {
	h.mu.Lock()
	if h.renewal != l || l == nil {
		h.mu.Unlock()
		return
	}
	h.renewal, h.holds, h.token, h.err, h.lost = nil, 0, 0, reason, lost
	close(h.done)
	held := time.Since(h.since)
	h.mu.Unlock()
	h.cfg.Engine.Observe(Ended(h.cfg.Observed, held, reason))
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

// Member describes a lock handle whose hold can be taken together with
// others of the same Client in one script (rlock.Mutex): see AttemptAll.
type Member struct {
	Engine  *engine.Engine
	Hold    *Hold
	Request scripts.LockRequest
	// Usable is false when the handle's name cannot be used on this
	// deployment (its methods report why).
	Usable bool
}

var describers []func(any) (*Member, bool)

// RegisterMember is called from a lock package's init with a function that
// recognises its handles.
func RegisterMember(describe func(any) (*Member, bool)) { describers = append(describers, describe) }

// MemberOf describes l if a registered lock package recognises it.
func MemberOf(l any) (*Member, bool) {
	for _, d := range describers {
		if m, ok := d(l); ok {
			return m, true
		}
	}
	return nil, false
}

package hold

import (
	"context"
	"errors"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/scripts"
	"github.com/redisync/redisync/internal/watchdog"
)

// Attempt makes one acquisition with acquire, in the shape of engine.Attempt:
// whether it acquired, and when busy the wait hint from the script. A nil
// acquire is Config.Calls' Acquire.
func (h *Hold) Attempt(ctx context.Context, acquire AcquireFunc) (bool, time.Duration, error) {
	return attemptAll(ctx, h.self[:], true, nil, acquire)
}

// AcquireAllFunc runs one script that acquires several holds, all or none:
// one result per hold when granted, or (nil, busy) with busy.PTTL the wait
// hint.
type AcquireAllFunc func(ctx context.Context) (granted []scripts.Acquired, busy scripts.Acquired, err error)

// AttemptAll makes one acquisition of several holds of one Client with a
// single script (a same-slot multilock), with Attempt's guarantees for every
// one of them. The holds must be passed in one canonical order (their op
// locks are taken in it). The script keeps no latches: the undo of a
// shared owner's grant there relies on the count it expects.
func AttemptAll(ctx context.Context, holds []*Hold, acquire AcquireAllFunc) (bool, time.Duration, error) {
	return attemptAll(ctx, holds, false, acquire, nil)
}

// attemptAll runs acquireAll, or acquire for a single hold (Attempt's).
func attemptAll(ctx context.Context, holds []*Hold, latched bool, acquireAll AcquireAllFunc, acquire AcquireFunc) (bool, time.Duration, error) {
	// The op locks bound the wait by ctx: one may be held by a Client task
	// still undoing an earlier attempt against a server that does not
	// answer (up to the settle bound).
	for i, h := range holds {
		if err := h.op.LockCtx(ctx); err != nil {
			for _, taken := range holds[:i] {
				taken.op.Unlock()
			}
			return false, 0, err
		}
	}
	// The first hold's attempt state is this attempt's (under its op lock,
	// which a Client task undoing the attempt keeps until it is done). Once
	// the attempt is handed off, this goroutine no longer touches it: the
	// task may end it, and the handle's next operation reuse it.
	a := &holds[0].att
	a.ctx, a.holds, a.latched, a.acquireAll, a.acquire = ctx, holds, latched, acquireAll, acquire
	handedOff := false
	defer func() {
		if !handedOff {
			a.end()
		}
	}()
	e := holds[0].cfg.Engine
	if e.IsClosed() {
		return false, 0, errs.ErrClosed
	}
	for _, h := range holds {
		h.mu.Lock()
		n := h.holds
		h.mu.Unlock()
		if n > 0 && h.cfg.NonReentrant {
			return false, 0, errs.ErrNonReentrant
		}
	}
	// The acquire is never abandoned in flight (see engine.Settler): its
	// reply tells exactly what to undo. If ctx ends first, the Client's task
	// awaits the reply, undoes a grant, and only then frees the handle for
	// its next operation; Lock waits for that for at most engine.UndoWait
	// (awaitUndo), so that the undo has landed when it returns unless the
	// server does not answer.
	a.sent = time.Now()
	out, ok := a.settler.Settle(e, ctx)
	if !ok {
		handedOff = true
		awaitUndo(ctx, holds)
		return false, 0, ctx.Err()
	}
	res, busy, err, sent := out.res, out.busy, out.err, a.sent
	undoLater := func() {
		handedOff = true
		a.undoLater(e)
	}
	if err != nil {
		if errors.Is(err, scripts.ErrNonReentrant) {
			return false, 0, errs.ErrNonReentrant
		}
		if !out.unsent && !scripts.IsReply(err) {
			// No reply: the script may have run. Undo grants we cannot see;
			// if even that fails, the holds have no renewal and expire.
			undoLater()
		}
		if ctx.Err() != nil {
			if handedOff {
				awaitUndo(ctx, holds)
			}
			return false, 0, ctx.Err()
		}
		return false, 0, err
	}
	if res == nil {
		if ctx.Err() != nil {
			return false, 0, ctx.Err()
		}
		return false, engine.Hint(busy.PTTL), nil
	}
	if ctx.Err() != nil {
		// Granted, but the caller has gone: give it back.
		undoLater()
		awaitUndo(ctx, holds)
		return false, 0, ctx.Err()
	}
	for _, h := range holds {
		if time.Since(sent) >= h.cfg.Lease-watchdog.Drift(h.cfg.Lease) {
			// The reply came after the lease (less the drift margin)
			// had run out by our clock: the grant may already be
			// someone else's. Give it back and keep waiting.
			undoLater()
			return false, 0, nil
		}
	}
	for i, h := range holds {
		if err := h.granted(res[i], sent); err != nil {
			undoLater()
			return false, 0, err
		}
	}
	return true, 0, nil
}

// outcome is what an attempt's call returns.
type outcome struct {
	res    []scripts.Acquired
	busy   scripts.Acquired
	err    error
	unsent bool // the acquire was not sent (queued releases failed first)
}

// Call runs the attempt's acquire, with the handle's queued releases
// first, on the settler's context (engine.Settled).
func (a *attempt) Call(actx context.Context) outcome {
	// Releases this handle queued go first, in order, so an acquire
	// never meets (and re-enters) a hold its own Unlock already ended.
	for _, h := range a.holds {
		if err := h.drain(actx); err != nil {
			return outcome{err: err, unsent: true}
		}
	}
	a.before = a.one[:0]
	for _, h := range a.holds {
		h.mu.Lock()
		a.before = append(a.before, h.remote)
		h.mu.Unlock()
		h.cur = scripts.Latch{}
		if a.latched {
			h.cur = h.nextLatch()
		}
	}
	a.sent = time.Now()
	var res []scripts.Acquired
	var busy scripts.Acquired
	var err error
	if h := a.holds[0]; a.acquireAll == nil {
		if a.acquire != nil {
			busy, err = a.acquire(actx)
		} else {
			busy, err = h.cfg.Calls.Acquire(actx)
		}
		if err == nil && busy.OK {
			h.grant[0], busy = busy, scripts.Acquired{}
			res = h.grant[:]
		}
	} else {
		res, busy, err = a.acquireAll(actx)
	}
	return outcome{res: res, busy: busy, err: engine.Cause(actx, err)}
}

// Settle undoes what a call whose caller had gone did, and ends the
// attempt (a Client task; engine.Settled).
func (a *attempt) Settle(out outcome) {
	defer a.end()
	if !out.unsent && (out.res != nil || (out.err != nil && !scripts.IsReply(out.err))) {
		a.undo() // granted, or no reply: the release acts only on what this acquire did
	}
}

// OwnAcquireFunc makes an acquisition that the primitive settles itself
// (redlock's quorum round, whose nodes answer separately): it never
// abandons an acquire in flight, and gives back whatever it does not
// report as granted. It returns the grant (res.OK false when busy or
// failed) and when the acquisition was sent (the lease counts from there).
type OwnAcquireFunc func(ctx context.Context) (res scripts.Acquired, sent time.Time, err error)

// AttemptOwn makes one acquisition with acquire and keeps for it what
// Attempt guarantees about the hold: the handle's queued releases reach
// Redis first; a grant whose caller has gone, or whose lease had run out by
// the local clock when acquire returned, is given back with Config.Release
// by a Client task (the handle's next operation waits for it) and never
// reported; a held LocalCount handle nests without I/O. It reports whether
// the handle now holds, and the error of acquire or of the queued releases.
func (h *Hold) AttemptOwn(ctx context.Context, acquire OwnAcquireFunc) (bool, error) {
	if err := h.op.LockCtx(ctx); err != nil {
		return false, err
	}
	handedOff := false
	defer func() {
		if !handedOff {
			h.op.Unlock()
		}
	}()
	e := h.cfg.Engine
	if e.IsClosed() {
		return false, errs.ErrClosed
	}
	h.mu.Lock()
	n, before := h.holds, h.remote
	nest := n > 0 && h.cfg.LocalCount && !h.cfg.NonReentrant
	if nest {
		h.holds++
	}
	h.mu.Unlock()
	switch {
	case nest:
		return true, nil
	case n > 0 && h.cfg.NonReentrant:
		return false, errs.ErrNonReentrant
	}
	if err := h.drain(ctx); err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, err
	}
	res, sent, err := acquire(ctx)
	if err != nil || !res.OK {
		return false, err
	}
	giveBack := func() {
		handedOff = true
		e.Go(func() {
			defer h.op.Unlock()
			h.compensate(ctx, before)
		})
	}
	if ctx.Err() != nil {
		giveBack() // granted, but the caller has gone
		awaitUndo(ctx, []*Hold{h})
		return false, ctx.Err()
	}
	if time.Since(sent) >= h.cfg.Lease-watchdog.Drift(h.cfg.Lease) {
		giveBack() // the grant may already be someone else's
		return false, nil
	}
	if err := h.granted(res, sent); err != nil {
		giveBack()
		return false, err
	}
	return true, nil
}

// attempt is the state of one attemptAll call: the holds whose op locks it
// holds, and the owners' counts before it (what an undo restores). Each
// Hold keeps one, reused by its attempts (under the first hold's op lock),
// so the hot path allocates neither it nor closures.
type attempt struct {
	ctx        context.Context
	holds      []*Hold
	acquire    AcquireFunc    // a single hold's (Attempt), or nil
	acquireAll AcquireAllFunc // AttemptAll's
	before     []int64
	one        [1]int64  // before's storage for the usual single hold
	sent       time.Time // when the acquire was sent
	latched    bool      // the acquire script takes the holds' latches
	settler    engine.Settler[outcome]
}

// end lets go of the attempt's references and unlocks the holds' ops: the
// handle's next operation may begin.
func (a *attempt) end() {
	holds := a.holds
	a.ctx, a.holds, a.acquire, a.acquireAll, a.before = nil, nil, nil, nil, nil
	for _, h := range holds {
		h.op.Unlock()
	}
}

// undo gives back whatever the acquire granted (see compensate).
func (a *attempt) undo() {
	for i, h := range a.holds {
		var before int64
		if i < len(a.before) {
			before = a.before[i]
		}
		h.compensate(a.ctx, before)
	}
}

// undoLater gives the undo to a Client task, which keeps the handle's
// operations waiting until it is done: the caller does not wait past
// engine.UndoWait for it (awaitUndo) even when
// the network swallows the release's reply.
func (a *attempt) undoLater(e *engine.Engine) {
	e.Go(func() {
		defer a.end()
		a.undo()
	})
}

// granted records a successful acquisition.
func (h *Hold) granted(res scripts.Acquired, sent time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.cfg.Engine.Watchdog
	if h.renewal != nil { // re-entered: the lease was extended
		h.holds++
		h.remote = res.Count
		h.marked = h.marked || h.cur.Field != ""
		w.Confirm(h.renewal, sent)
		return nil
	}
	target := h.renewTarget(res.Token)
	if g, ok := target.(engine.Granted); ok {
		g.NoteGrant(sent, h.cfg.Fixed)
	}
	var l *watchdog.Lease
	if c, ok := target.(engine.LeaseCarrier); ok {
		l = c.Lease()
	} else {
		l = new(watchdog.Lease)
	}
	l.TTL, l.Fixed, l.Target = h.cfg.Lease, h.cfg.Fixed, target
	if !h.cfg.Fixed || h.cfg.Engine.RecordsFor(target) {
		l.Renewer = h.cfg.Renewer // a fixed lease's: for its holder record only
	}
	l.Notify = h
	if err := w.Add(l, sent); err != nil {
		return errs.ErrClosed
	}
	if h.lost {
		// Locked again past a lost hold, before its Unlock (a reentrant
		// handle): that Unlock still comes, after this hold's, and reports
		// the loss.
		h.unreported = append(h.unreported, loss{token: h.ended, holds: h.endedHolds, err: h.err})
	}
	h.holds, h.remote = 1, res.Count
	h.marked = h.cur.Field != "" || (h.marked && len(h.unreported) > 0)
	h.renewal, h.token, h.err, h.lost = l, res.Token, nil, false
	h.done, h.since = make(chan struct{}), sent
	return nil
}

// compensate undoes a grant whose reply we did not see or no longer want
// (under op). With a latch it names the acquire's request; otherwise the
// owner's count is either before (nothing happened) or before+1, and the
// release acts only in the second case. A send the server does not answer
// is repeated (engine.Persist) until the lease would have ended the grant
// anyway; since it names the acquire, an undo that overtook its acquire
// does nothing, and the one more send after the first answer undoes the
// acquire that landed after it.
func (h *Hold) compensate(ctx context.Context, before int64) {
	args := scripts.ReleaseArgs{Expected: before + 1}
	if h.cur.Field != "" {
		args = scripts.ReleaseArgs{Expected: scripts.ReleaseUndo, Latch: h.cur}
		h.mu.Lock()
		if h.holds == 0 && len(h.queue) == 0 && !h.lost && len(h.unreported) == 0 && !h.marked {
			// Nothing else of this handle's is in the hash (nor will be
			// before this undo: the next acquire waits for it): when the
			// acquire granted, its latch goes with the grant.
			args.Last = true
		}
		h.mu.Unlock()
	}
	h.cfg.Engine.Persist(ctx, time.Now().Add(h.cfg.Lease), true, func(bctx context.Context) bool {
		r, err := h.send(bctx, args)
		if err != nil {
			return !engine.Resend(err)
		}
		h.mu.Lock()
		h.remote = r.Count
		h.mu.Unlock()
		return true
	})
}
